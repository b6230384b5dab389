/**
 * flux-core + flux-sched built from the source tarballs, inside a chroot of a Debian builder
 * rootfs (never on the machine itself), at the prefix where the images will hold them. The result
 * is cached by the sources' sha256, the build scripts and the builder's package list.
 */
import { cachedDir, imageCacheRoot, inputKey, removeTree, sha256File } from "./cache.ts";
import { log, run, step, type StepTiming } from "./progress.ts";
import { ensureRootfs } from "./rootfs.ts";
import { FLUX_BUILD_PACKAGES } from "./flux_packages.ts";
import { FLUX_CORE_VERSION, FLUX_SCHED_VERSION } from "./refs.ts";

/**
 * Where Flux lives in the images. Spack-like (a directory per install under /opt/software),
 * because the operator's scripts copy /opt/software between containers; Fluxion shares the
 * prefix so that flux-core's rc1.d loads it.
 */
export const FLUX_PREFIX = `/opt/software/flux-${FLUX_CORE_VERSION}`;

export const FLUX_CORE_TARBALL = `flux-core-${FLUX_CORE_VERSION}.tar.gz`;
export const FLUX_SCHED_TARBALL = `flux-sched-${FLUX_SCHED_VERSION}.tar.gz`;

/** The source tarballs: $FLUX_SOURCE_DIR, else the shared snapshots. */
export function fluxSourceDir(): string {
  return Deno.env.get("FLUX_SOURCE_DIR") || "/work/shared/flux";
}

export interface FluxInstall {
  /** A copy of FLUX_PREFIX's contents on this machine (runs only where it is FLUX_PREFIX). */
  dir: string;
  /** The cache key, which also names the view. */
  key: string;
  /** How long each part of the build took (from its log), or empty if it was cached. */
  timings: StepTiming[];
}

const here = new URL(".", import.meta.url).pathname;
const BUILD_SCRIPT = `${here}flux_build.sh`;
const CHROOT_RUN = `${here}chroot_run.sh`;

/** Lines "=== step NAME SECONDS" that flux_build.sh prints after each step. */
export function parseStepTimings(buildLog: string): StepTiming[] {
  return [...buildLog.matchAll(/^=== step (\S+) (\d+)$/gm)].map((m) => ({
    step: `flux ${m[1]}`,
    seconds: Number(m[2]),
  }));
}

export async function ensureFluxInstall(): Promise<FluxInstall> {
  const sources = fluxSourceDir();
  const [coreSha, schedSha] = await Promise.all([
    sha256File(`${sources}/${FLUX_CORE_TARBALL}`),
    sha256File(`${sources}/${FLUX_SCHED_TARBALL}`),
  ]);
  const builder = await ensureRootfs({ name: "flux-builder", packages: FLUX_BUILD_PACKAGES });
  const key = await inputKey({
    coreSha,
    schedSha,
    prefix: FLUX_PREFIX,
    versions: [FLUX_CORE_VERSION, FLUX_SCHED_VERSION],
    // The builder's directory name carries the hash of its package list.
    builder: builder.split("/").at(-2),
    script: await Deno.readTextFile(BUILD_SCRIPT),
    chroot: await Deno.readTextFile(CHROOT_RUN),
  });
  const entry = `${imageCacheRoot()}/flux/${key}`;
  let timings: StepTiming[] = [];
  await cachedDir(entry, async (tmp) => {
    const upper = `${tmp}/upper`;
    await Deno.mkdir(`${upper}/build/src`, { recursive: true });
    await Deno.mkdir(`${tmp}/work`);
    await Deno.copyFile(
      `${sources}/${FLUX_CORE_TARBALL}`,
      `${upper}/build/src/${FLUX_CORE_TARBALL}`,
    );
    await Deno.copyFile(
      `${sources}/${FLUX_SCHED_TARBALL}`,
      `${upper}/build/src/${FLUX_SCHED_TARBALL}`,
    );
    await Deno.copyFile(BUILD_SCRIPT, `${upper}/build/flux_build.sh`);
    const buildLog = `${tmp}/build.log`;
    log(`flux build log: ${buildLog}`);
    await step(
      `flux build (flux-core ${FLUX_CORE_VERSION}, flux-sched ${FLUX_SCHED_VERSION})`,
      () =>
        run([
          CHROOT_RUN,
          "--lower",
          builder,
          "--upper",
          upper,
          "--work",
          `${tmp}/work`,
          "--env",
          `PREFIX=${FLUX_PREFIX}`,
          "--env",
          `FLUX_VERSION=${FLUX_CORE_VERSION}`,
          "--env",
          `FLUX_SCHED_VERSION=${FLUX_SCHED_VERSION}`,
          "--env",
          `JOBS=${navigator.hardwareConcurrency}`,
          `${tmp}/root`,
          "--",
          "/bin/bash",
          "/build/flux_build.sh",
        ], { logFile: buildLog }),
    );
    timings = parseStepTimings(await Deno.readTextFile(buildLog));
    await Deno.writeTextFile(`${tmp}/timings.json`, JSON.stringify(timings, null, 2) + "\n");
    // Keep only the install; the sources and objects are gigabytes.
    await Deno.rename(`${upper}${FLUX_PREFIX}`, `${tmp}/install`);
    for (const dir of ["upper", "work", "root"]) await removeTree(`${tmp}/${dir}`);
  });
  if (timings.length === 0) {
    timings = JSON.parse(await Deno.readTextFile(`${entry}/timings.json`)) as StepTiming[];
    timings = timings.map((t) => ({ ...t, step: `${t.step} (cached)` }));
  }
  return { dir: `${entry}/install`, key, timings };
}
