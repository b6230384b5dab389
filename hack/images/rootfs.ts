/**
 * Debian bookworm root filesystems made by mmdebstrap (`minbase` plus a package list), cached as
 * directories: images are layers tarred from them, and builds and checks chroot into them. A rootfs
 * with a pin list (debian_pins.ts) installs every package at its pinned version and is checked
 * against the list before it is cached.
 */
import { cachedDir, imageCacheRoot, inputKey } from "./cache.ts";
import {
  installedPackages,
  pinnedIncludes,
  pinProblems,
  readPins,
  unpinned,
} from "./debian_pins.ts";
import { run, step } from "./progress.ts";
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

/** The Debian release every rootfs is made from. */
export const DEBIAN_SUITE = "bookworm";

/** Where packages come from; security updates included, so that images are current. */
export const DEBIAN_SOURCES: readonly string[] = [
  "deb http://deb.debian.org/debian bookworm main",
  "deb http://deb.debian.org/debian bookworm-updates main",
  "deb http://deb.debian.org/debian-security bookworm-security main",
];

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
        try {
          await run(await mmdebstrapCommand(spec, `${tmp}/rootfs`), {
            logFile: `${tmp}/mmdebstrap.log`,
            env: { SOURCE_DATE_EPOCH: String(SOURCE_DATE_EPOCH) },
          });
        } catch (e) {
          if (!spec.pins) throw e;
          // apt says "E: Version '…' for '…' was not found" in the log's tail above this.
          throw new Error(
            `${(e as Error).message}\nThe ${spec.name} rootfs installs the versions ${spec.pins} ` +
              `pins; when Debian no longer has one, ${REFRESH}.`,
          );
        }
        if (spec.pins) await checkPins(spec, spec.pins, `${tmp}/rootfs`);
      }),
  );
  return `${entry}/rootfs`;
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
