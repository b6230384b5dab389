/**
 * The Flux images: flux-app (Debian bookworm with what Flux needs at run time, the base of
 * application containers) and flux-view (the same rootfs plus Flux under /opt/software and a
 * spack-like view of it under /opt/views, as the operator's flux-view init script expects).
 * flux-view's first layer is flux-app's layer, so a node that has one has half of the other.
 */
import { ensureRootfs, rootfsEntry, type RootfsSpec } from "./rootfs.ts";
import { cachedLayer } from "./layers.ts";
import { ensureFluxInstall, FLUX_PREFIX, fluxInstallKey } from "./flux_install.ts";
import { FLUX_RUNTIME_PACKAGES } from "./flux_packages.ts";
import type { ImageSpec, Layer } from "./docker_archive.ts";
import { run } from "./progress.ts";
import { writeView } from "./view.ts";
import { clampPycTimestamps } from "./pyc_timestamps.ts";
import {
  FLUX_APP_IMAGE,
  FLUX_APP_IMAGE_LATEST,
  FLUX_CORE_VERSION,
  FLUX_SCHED_VERSION,
  FLUX_VIEW_IMAGE,
  FLUX_VIEW_IMAGE_LATEST,
  SOURCE_DATE_EPOCH,
} from "./refs.ts";

/** Where the views are, and the link to the current one that the scripts use as the Flux root. */
const VIEWS_DIR = "/opt/views/._view";
const VIEW_LINK = "/opt/view";

const PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Bump when the view layer is laid out differently. */
const VIEW_RECIPE = 2;

const FLUX_APP_ROOTFS: RootfsSpec = { name: "flux-app", packages: FLUX_RUNTIME_PACKAGES };

function fluxAppLayer(): Promise<Layer> {
  return rootfsEntry(FLUX_APP_ROOTFS).then(({ name }) =>
    cachedLayer(
      "flux-app",
      { rootfs: name },
      `mmdebstrap --variant=minbase --include=${
        [...FLUX_RUNTIME_PACKAGES].sort().join(",")
      } bookworm`,
      () => ensureRootfs(FLUX_APP_ROOTFS),
    )
  );
}

export async function fluxAppImageSpec(): Promise<ImageSpec> {
  return {
    refs: [FLUX_APP_IMAGE, FLUX_APP_IMAGE_LATEST],
    layers: [await fluxAppLayer()],
    config: { Cmd: ["/bin/bash"], Env: [`PATH=${PATH}`, "LANG=C.UTF-8"] },
    created: SOURCE_DATE_EPOCH,
  };
}

/** The view's directory name: a hash, as spack names its views, here of the install's inputs. */
function viewHash(installKey: string): string {
  return installKey;
}

export async function fluxViewImageSpec(): Promise<ImageSpec> {
  const base = await fluxAppLayer();
  const installKey = await fluxInstallKey();
  const viewDir = `${VIEWS_DIR}/${viewHash(installKey)}`;
  const layer = await cachedLayer(
    "flux-view",
    { install: installKey, VIEW_RECIPE, FLUX_PREFIX, viewDir },
    `flux-core ${FLUX_CORE_VERSION} + flux-sched ${FLUX_SCHED_VERSION} at ${FLUX_PREFIX}, ` +
      `view ${viewDir}, ${VIEW_LINK} -> ${viewDir}`,
    async (tree) => {
      const install = await ensureFluxInstall();
      await Deno.mkdir(`${tree}${FLUX_PREFIX.slice(0, FLUX_PREFIX.lastIndexOf("/"))}`, {
        recursive: true,
      });
      // Hard links: the tree only lives until it is tarred.
      await run(["cp", "-al", install.dir, `${tree}${FLUX_PREFIX}`]);
      // The layer's one mtime would make the install's bytecode stale (pyc_timestamps.ts).
      await clampPycTimestamps(`${tree}${FLUX_PREFIX}`, SOURCE_DATE_EPOCH);
      await writeView(install.dir, FLUX_PREFIX, `${tree}${viewDir}`);
      await Deno.symlink(viewDir, `${tree}${VIEW_LINK}`);
      return tree;
    },
  );
  return {
    refs: [FLUX_VIEW_IMAGE, FLUX_VIEW_IMAGE_LATEST],
    layers: [base, layer],
    config: {
      Cmd: ["/bin/bash"],
      Env: [`PATH=${VIEW_LINK}/bin:${PATH}`, "LANG=C.UTF-8"],
      Labels: {
        "org.opencontainers.image.version": FLUX_CORE_VERSION,
        "flux-framework.org/flux-sched-version": FLUX_SCHED_VERSION,
      },
    },
    created: SOURCE_DATE_EPOCH,
  };
}
