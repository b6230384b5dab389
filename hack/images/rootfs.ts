/**
 * Debian bookworm root filesystems made by mmdebstrap (`minbase` plus a package list), cached as
 * directories: images are layers tarred from them, and builds and checks chroot into them. A rootfs
 * with a pin list (debian_pins.ts) installs every package at its pinned version and is checked
 * against the list before it is cached.
 *
 * Debian keeps only a suite's newest versions, so a pin list goes stale at every point release or
 * security update: apt then cannot install a pinned version (not found, or older than what the
 * Essential round installed). A build must not fail on a fresh machine for that, so when the pinned
 * build fails and apt would install other versions today (debian_resolve.ts), the rootfs is built
 * from today's set, checked against it, and the build says loudly which packages moved and how to
 * refresh the list; the list stays the record of what was tested until it is refreshed.
 */
import { cachedDir, imageCacheRoot, inputKey, removeTree } from "./cache.ts";
import {
  formatPins,
  installedPackages,
  pinnedIncludes,
  pinProblems,
  readPins,
  unpinned,
} from "./debian_pins.ts";
import { resolvePins } from "./debian_resolve.ts";
import { DEBIAN_SOURCES, DEBIAN_SUITE } from "./debian_sources.ts";
import { log, run, step } from "./progress.ts";
import { SOURCE_DATE_EPOCH } from "./refs.ts";

export interface RootfsSpec {
  /** Names the cache entry, e.g. "flux-app". */
  name: string;
  /** Installed on top of `minbase` (Essential and required packages plus apt). */
  packages: readonly string[];
  /**
   * The pin list (debian_pins.ts) naming every package of the rootfs at its version: when given,
   * exactly those are installed, and a build that would install anything else fails.
   */
  pins?: string;
}

/** Images carry no manuals, translations or docs, only the licences (copyright files). */
const DPKG_OPTIONS: readonly string[] = [
  "path-exclude=/usr/share/man/*",
  "path-exclude=/usr/share/info/*",
  "path-exclude=/usr/share/locale/*",
  "path-include=/usr/share/locale/locale.alias",
  "path-exclude=/usr/share/doc/*",
  "path-include=/usr/share/doc/*/copyright",
];

/** Bump to rebuild every rootfs after a change of how they are made that the inputs miss. */
const RECIPE = 1;

/** Where the rootfs for `spec` is (or will be) cached; `name` is "<spec.name>-<key>". */
export async function rootfsEntry(spec: RootfsSpec): Promise<{ name: string; dir: string }> {
  const packages = [...new Set(spec.packages)].sort();
  const pins = spec.pins ? pinnedIncludes(await readPins(spec.pins)) : undefined;
  const key = await inputKey({
    RECIPE,
    packages,
    ...(pins ? { pins } : {}),
    sources: DEBIAN_SOURCES,
    dpkg: DPKG_OPTIONS,
    epoch: SOURCE_DATE_EPOCH,
  });
  const name = `${spec.name}-${key}`;
  return { name, dir: `${imageCacheRoot()}/rootfs/${name}` };
}

/**
 * What mmdebstrap is asked to install beyond minbase: the spec's packages, or, with a pin list,
 * every pinned package at its version (which must name each of the spec's packages).
 */
async function includes(spec: RootfsSpec): Promise<string[]> {
  const packages = [...new Set(spec.packages)].sort();
  if (!spec.pins) return packages;
  const pins = await readPins(spec.pins);
  const missing = unpinned(packages, pins);
  if (missing.length > 0) {
    throw new Error(
      `${spec.pins} does not pin ${missing.join(", ")} of the ${spec.name} rootfs: ${REFRESH}`,
    );
  }
  return pinnedIncludes(pins);
}

const REFRESH = "refresh it with `deno run -A hack/images/pin_debian_packages.ts` " +
  "(docs/development.md)";

/** The mmdebstrap command that makes the rootfs of `spec` at `target`. */
export async function mmdebstrapCommand(spec: RootfsSpec, target: string): Promise<string[]> {
  const include = await includes(spec);
  return [
    "mmdebstrap",
    "--mode=root",
    "--variant=minbase",
    "--format=directory",
    ...(include.length > 0 ? [`--include=${include.join(",")}`] : []),
    ...DPKG_OPTIONS.map((o) => `--dpkgopt=${o}`),
    DEBIAN_SUITE,
    target,
    ...DEBIAN_SOURCES,
  ];
}

/** The cached rootfs directory for `spec`, made by mmdebstrap if it is missing. */
export async function ensureRootfs(spec: RootfsSpec): Promise<string> {
  const count = (await includes(spec)).length;
  const { dir: entry } = await rootfsEntry(spec);
  await cachedDir(
    entry,
    (tmp) =>
      step(`rootfs ${spec.name}: mmdebstrap minbase + ${count} packages`, async () => {
        const mmdebstrap = async (s: RootfsSpec, logFile: string) =>
          run(await mmdebstrapCommand(s, `${tmp}/rootfs`), {
            logFile,
            env: { SOURCE_DATE_EPOCH: String(SOURCE_DATE_EPOCH) },
          });
        try {
          await mmdebstrap(spec, `${tmp}/mmdebstrap.log`);
          if (spec.pins) await checkPins(spec, spec.pins, `${tmp}/rootfs`);
        } catch (e) {
          if (!spec.pins) throw e;
          const failed = (e as Error).message;
          const today = await movedPins(spec, spec.pins, `${tmp}/apt`).catch((err: Error) => {
            throw new Error(
              `${failed}\nWhat apt would install today could not be resolved either: ${err.message}`,
            );
          });
          if (!today) {
            // apt's own words ("E: Version '…' was not found", a downgrade) are in the log.
            throw new Error(
              `${failed}\nThe ${spec.name} rootfs installs the versions ${spec.pins} pins, which ` +
                `are what apt would install today: Debian has not moved, the cause is in the log.`,
            );
          }
          const pins = `${tmp}/pins-today.txt`;
          await Deno.writeTextFile(pins, formatPins(today.pins, [`what apt installs today`]));
          log(
            `WARNING: Debian has moved since ${spec.pins} was written; the pinned build failed ` +
              `(mmdebstrap ${
                failed.split("\n")[0].match(/exited with .*$/)?.[0] ?? "failed"
              }). Building the ${spec.name} rootfs with ` +
              `today's versions instead, ${today.moved.length} package(s) differ:\n  ` +
              `${today.moved.join("\n  ")}\nThen ${REFRESH}, and commit it.`,
          );
          await removeTree(`${tmp}/rootfs`);
          await mmdebstrap({ ...spec, pins }, `${tmp}/mmdebstrap-today.log`);
          await checkPins(spec, pins, `${tmp}/rootfs`);
        }
      }),
  );
  return `${entry}/rootfs`;
}

/**
 * What apt would install today for a pinned `spec` and how it differs from the list at `file`
 * (debian_pins.ts `pinProblems` lines, read as "today's version installed, the list's pinned");
 * undefined when nothing differs.
 */
async function movedPins(
  spec: RootfsSpec,
  file: string,
  aptRoot: string,
): Promise<{ pins: Map<string, string>; moved: string[] } | undefined> {
  const pins = await resolvePins(spec.packages, aptRoot);
  const moved = pinProblems(await readPins(file), pins);
  return moved.length === 0 ? undefined : { pins, moved };
}

/** Fails unless the rootfs at `rootfs` holds exactly the pinned packages, at their versions. */
export async function checkPins(spec: RootfsSpec, file: string, rootfs: string): Promise<void> {
  const installed = installedPackages(await Deno.readTextFile(`${rootfs}/var/lib/dpkg/status`));
  const problems = pinProblems(await readPins(file), installed);
  if (problems.length === 0) return;
  throw new Error(
    `the ${spec.name} rootfs is not what ${file} pins (${problems.length} packages):\n  ` +
      `${problems.join("\n  ")}\n${REFRESH}.`,
  );
}
