/**
 * What apt would install today for a rootfs: the package set mmdebstrap's `minbase` variant makes,
 * resolved by apt in simulation against Debian's current indexes, in a private apt directory (the
 * host's apt state is neither read nor changed). About 10 s, mostly the indexes' download.
 *
 * mmdebstrap (1.3, bookworm's) installs in two rounds, and this resolves them the same way:
 * first the Essential packages of the suite itself (`?narrow(?archive(^bookworm$), ?essential)`,
 * from an empty dpkg status), then, with those installed, the suite's other `required` packages and
 * the spec's packages (from every source, updates and security included), without Recommends.
 * A difference from what mmdebstrap then really installs fails the rootfs build (rootfs.ts).
 */
import { pinnedIncludes, pinProblems } from "./debian_pins.ts";
import { DEBIAN_SOURCES, DEBIAN_SUITE } from "./debian_sources.ts";

const ARCH = "amd64";

/** The suite's own versions of `pattern` (mmdebstrap's narrowing of its package rounds). */
function inSuite(pattern: string): string {
  return `?narrow(?or(?archive(^${DEBIAN_SUITE}$),?codename(^${DEBIAN_SUITE}$)),` +
    `?architecture(${ARCH}),${pattern})`;
}

/** A private apt: its own sources, indexes, cache and dpkg status under `root`. */
async function privateApt(root: string): Promise<(args: string[]) => Promise<string>> {
  for (const dir of ["etc/apt/apt.conf.d", "etc/apt/preferences.d", "var/lib/dpkg", "var/cache"]) {
    await Deno.mkdir(`${root}/${dir}`, { recursive: true });
  }
  await Deno.mkdir(`${root}/var/lib/apt/lists/partial`, { recursive: true });
  await Deno.writeTextFile(`${root}/etc/apt/sources.list`, DEBIAN_SOURCES.join("\n") + "\n");
  await Deno.writeTextFile(`${root}/var/lib/dpkg/status`, "");
  const conf = `${root}/apt.conf`;
  await Deno.writeTextFile(
    conf,
    [
      `Dir "${root}/";`,
      `Dir::State::status "${root}/var/lib/dpkg/status";`,
      // The host's keys of Debian's archive, as mmdebstrap uses them.
      `Dir::Etc::Trusted "/etc/apt/trusted.gpg";`,
      `Dir::Etc::TrustedParts "/etc/apt/trusted.gpg.d/";`,
      `APT::Architecture "${ARCH}";`,
      `APT::Architectures "${ARCH}";`,
      // What mmdebstrap sets: no Recommends, and apt is not taken as Essential by itself.
      `APT::Install-Recommends "false";`,
      `pkgCacheGen::ForceEssential ",";`,
      `Acquire::Languages "none";`,
      `APT::Sandbox::User "root";`,
    ].join("\n") + "\n",
  );
  return async (args) => {
    const out = await new Deno.Command("apt-get", {
      args,
      env: { APT_CONFIG: conf, DEBIAN_FRONTEND: "noninteractive", LC_ALL: "C" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    if (!out.success) {
      throw new Error(
        `apt-get ${args.join(" ")} exited with ${out.code}\n${text.decode(out.stderr)}`,
      );
    }
    return text.decode(out.stdout);
  };
}

/** package → version of the `Inst` lines of `apt-get --simulate` output. */
export function simulatedInstalls(output: string): Map<string, string> {
  const installs = new Map<string, string>();
  for (const line of output.split("\n")) {
    // "Inst libc6 (2.36-9+deb12u13 Debian:12.13/stable [amd64])", "Inst tar [1.34] (1.34+dfsg ...)"
    const m = line.match(/^Inst (\S+) (?:\[\S+\] )?\((\S+) /);
    if (m) installs.set(m[1], m[2]);
  }
  return installs;
}

/** The dpkg status of `pins` installed: their index stanzas, each marked installed. */
async function statusOf(
  cache: (args: string[]) => Promise<string>,
  pins: ReadonlyMap<string, string>,
): Promise<string> {
  const stanzas = await cache(["show", ...[...pins].map(([p, v]) => `${p}=${v}`)]);
  return stanzas.split(/\n\s*\n/).filter((s) => s.trim() !== "").map((s) =>
    s.replace(/^(Package: .*)$/m, "$1\nStatus: install ok installed")
  ).join("\n\n") + "\n";
}

/**
 * What apt would install today for `packages` on minbase, as mmdebstrap does it, resolved in a
 * private apt directory under `root`.
 */
export async function resolvePins(
  packages: readonly string[],
  root: string,
): Promise<Map<string, string>> {
  const apt = await privateApt(root);
  const cache = (args: string[]) =>
    new Deno.Command("apt-cache", {
      args,
      env: { APT_CONFIG: `${root}/apt.conf`, LC_ALL: "C" },
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).output().then((o) => {
      if (!o.success) throw new Error(`apt-cache ${args.join(" ")} exited with ${o.code}`);
      return new TextDecoder().decode(o.stdout);
    });
  await apt(["update", "-qq"]);
  const essential = simulatedInstalls(await apt(["install", "--simulate", inSuite("?essential")]));
  await Deno.writeTextFile(`${root}/var/lib/dpkg/status`, await statusOf(cache, essential));
  const rest = simulatedInstalls(
    await apt([
      "install",
      "--simulate",
      ...[...new Set(packages)].sort(),
      inSuite("?and(?priority(required),?not(?essential))"),
    ]),
  );
  const pins = new Map([...essential, ...rest]);
  // The build's own request (every pin as package=version, after the same Essential round) must
  // install exactly the pins; rootfs.ts checks the real rootfs the same way.
  const build = simulatedInstalls(
    await apt([
      "install",
      "--simulate",
      ...pinnedIncludes(pins),
      inSuite("?and(?priority(required),?not(?essential))"),
    ]),
  );
  const problems = pinProblems(pins, new Map([...essential, ...build]));
  if (problems.length > 0) {
    throw new Error(
      `installing the pins would not install them alone:\n  ${problems.join("\n  ")}`,
    );
  }
  return pins;
}
