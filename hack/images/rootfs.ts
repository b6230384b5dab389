/**
 * Debian bookworm root filesystems made by mmdebstrap (`minbase` plus a package list), cached as
 * directories: images are layers tarred from them, and builds and checks chroot into them.
 */
import { cachedDir, imageCacheRoot, inputKey } from "./cache.ts";
import { run, step } from "./progress.ts";
import { SOURCE_DATE_EPOCH } from "./refs.ts";

export interface RootfsSpec {
  /** Names the cache entry, e.g. "flux-app". */
  name: string;
  /** Installed on top of `minbase` (Essential and required packages plus apt). */
  packages: readonly string[];
}

/** Where packages come from; security updates included, so that images are current. */
const DEBIAN_SOURCES: readonly string[] = [
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
  const key = await inputKey({
    RECIPE,
    packages,
    sources: DEBIAN_SOURCES,
    dpkg: DPKG_OPTIONS,
    epoch: SOURCE_DATE_EPOCH,
  });
  const name = `${spec.name}-${key}`;
  return { name, dir: `${imageCacheRoot()}/rootfs/${name}` };
}

/** The cached rootfs directory for `spec`, made by mmdebstrap if it is missing. */
export async function ensureRootfs(spec: RootfsSpec): Promise<string> {
  const packages = [...new Set(spec.packages)].sort();
  const { dir: entry } = await rootfsEntry(spec);
  await cachedDir(
    entry,
    (tmp) =>
      step(`rootfs ${spec.name}: mmdebstrap minbase + ${packages.length} packages`, () =>
        run([
          "mmdebstrap",
          "--mode=root",
          "--variant=minbase",
          "--format=directory",
          ...(packages.length > 0 ? [`--include=${packages.join(",")}`] : []),
          ...DPKG_OPTIONS.map((o) => `--dpkgopt=${o}`),
          "bookworm",
          `${tmp}/rootfs`,
          ...DEBIAN_SOURCES,
        ], {
          logFile: `${tmp}/mmdebstrap.log`,
          env: { SOURCE_DATE_EPOCH: String(SOURCE_DATE_EPOCH) },
        })),
  );
  return `${entry}/rootfs`;
}
