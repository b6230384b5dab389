/**
 * flux-core + flux-sched built from the source tarballs, inside a chroot of a Debian builder
 * rootfs (never on the machine itself), at the prefix where the images will hold them. The result
 * is cached by the sources' sha256, the build scripts and the builder's package list.
 */
import { sharedPath } from "../shared_material.ts";
import { cachedDir, imageCacheRoot, inputKey, removeTree, sha256File } from "./cache.ts";
import { CHROOT_RUN, chrootCommand } from "./chroot_command.ts";
import { log, run, step, type StepTiming, timings } from "./progress.ts";
import { ensureRootfs, rootfsEntry, type RootfsSpec } from "./rootfs.ts";
import { FLUX_BUILD_PACKAGES } from "./flux_packages.ts";
import { FLUX_CORE_VERSION, FLUX_SCHED_VERSION } from "./refs.ts";

/**
 * Where Flux lives in the images. Spack-like (a directory per install under /opt/software),
 * because the operator's scripts copy /opt/software between containers; Fluxion shares the
 * prefix so that flux-core's rc1.d loads it.
 */
export const FLUX_PREFIX = `/opt/software/flux-${FLUX_CORE_VERSION}`;

const FLUX_CORE_TARBALL = `flux-core-${FLUX_CORE_VERSION}.tar.gz`;
const FLUX_SCHED_TARBALL = `flux-sched-${FLUX_SCHED_VERSION}.tar.gz`;

/** The source tarballs: $FLUX_SOURCE_DIR, else the shared snapshots (hack/shared_material.ts). */
function fluxSourceDir(): string {
  return sharedPath("flux", Deno.env.get("FLUX_SOURCE_DIR") || undefined);
}

export interface FluxInstall {
  /** A copy of FLUX_PREFIX's contents on this machine (runs only where it is FLUX_PREFIX). */
  dir: string;
  /** The cache key, which also names the view. */
  key: string;
}

const BUILDER: RootfsSpec = { name: "flux-builder", packages: FLUX_BUILD_PACKAGES };

const here = new URL(".", import.meta.url).pathname;
const BUILD_SCRIPT = `${here}flux_build.sh`;

/** Lines "=== step NAME SECONDS" that flux_build.sh prints after each step. */
export function parseStepTimings(buildLog: string): StepTiming[] {
  return [...buildLog.matchAll(/^=== step (\S+) (\d+)$/gm)].map((m) => ({
    step: `flux ${m[1]}`,
    seconds: Number(m[2]),
  }));
}

/** The install's cache key, from the hashes of its inputs: nothing is built. */
export async function fluxInstallKey(): Promise<string> {
  const sources = fluxSourceDir();
  const [coreSha, schedSha] = await Promise.all([
    sha256File(`${sources}/${FLUX_CORE_TARBALL}`),
    sha256File(`${sources}/${FLUX_SCHED_TARBALL}`),
  ]);
  return inputKey({
    coreSha,
    schedSha,
    prefix: FLUX_PREFIX,
    versions: [FLUX_CORE_VERSION, FLUX_SCHED_VERSION],
    // "flux-builder-<hash of its package list>"
    builder: (await rootfsEntry(BUILDER)).name,
    script: await Deno.readTextFile(BUILD_SCRIPT),
    chroot: await Deno.readTextFile(CHROOT_RUN),
  });
}

/** The install, built (with the builder rootfs, if that is missing too) unless cached. */
export async function ensureFluxInstall(): Promise<FluxInstall> {
  const key = await fluxInstallKey();
  const entry = `${imageCacheRoot()}/flux/${key}`;
  await cachedDir(entry, async (tmp) => {
    const sources = fluxSourceDir();
    const builder = await ensureRootfs(BUILDER);
    const upper = `${tmp}/upper`;
    await Deno.mkdir(`${upper}/build/src`, { recursive: true });
    await Deno.mkdir(`${tmp}/work`);
    for (const tarball of [FLUX_CORE_TARBALL, FLUX_SCHED_TARBALL]) {
      await Deno.copyFile(`${sources}/${tarball}`, `${upper}/build/src/${tarball}`);
    }
    await Deno.copyFile(BUILD_SCRIPT, `${upper}/build/flux_build.sh`);
    const buildLog = `${tmp}/build.log`;
    log(`flux build log: ${buildLog}`);
    await step(
      `flux build (flux-core ${FLUX_CORE_VERSION}, flux-sched ${FLUX_SCHED_VERSION})`,
      () =>
        run(
          chrootCommand({
            rootfs: builder,
            root: `${tmp}/root`,
            upper: { dir: upper, work: `${tmp}/work` },
            env: [
              `PREFIX=${FLUX_PREFIX}`,
              `FLUX_VERSION=${FLUX_CORE_VERSION}`,
              `FLUX_SCHED_VERSION=${FLUX_SCHED_VERSION}`,
              `JOBS=${navigator.hardwareConcurrency}`,
            ],
          }, ["/bin/bash", "/build/flux_build.sh"]),
          { logFile: buildLog },
        ),
    );
    const stepTimings = parseStepTimings(await Deno.readTextFile(buildLog));
    timings.push(...stepTimings);
    await Deno.writeTextFile(`${tmp}/timings.json`, JSON.stringify(stepTimings, null, 2) + "\n");
    // Keep only the install; the sources and objects are gigabytes.
    await Deno.rename(`${upper}${FLUX_PREFIX}`, `${tmp}/install`);
    for (const dir of ["upper", "work", "root"]) await removeTree(`${tmp}/${dir}`);
  });
  return { dir: `${entry}/install`, key };
}
