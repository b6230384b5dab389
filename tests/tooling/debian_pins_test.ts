/**
 * The mpi image's Debian layer is pinned (issue 36, item 11): it is built from the checked-in list
 * hack/images/mpi_debian_pins.txt, every package it asks for is on the list at one version, apt is
 * asked for exactly those versions, and a rootfs holding anything else fails the build.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  formatPins,
  installedPackages,
  parsePins,
  pinnedIncludes,
  pinProblems,
  readPins,
} from "../../hack/images/debian_pins.ts";
import { MPI_ROOTFS } from "../../hack/images/mpi_image.ts";
import { simulatedInstalls } from "../../hack/images/debian_resolve.ts";
import { checkPins, mmdebstrapCommand, rootfsEntry } from "../../hack/images/rootfs.ts";

const PIN_FILE = new URL("../../hack/images/mpi_debian_pins.txt", import.meta.url).pathname;

/** A dpkg status file listing `packages` as installed (what a rootfs built from them holds). */
function dpkgStatus(packages: ReadonlyMap<string, string>, extra = ""): string {
  return [...packages].map(([p, v]) =>
    `Package: ${p}\nStatus: install ok installed\nPriority: optional\nArchitecture: amd64\n` +
    `Version: ${v}\nDescription: ${p}\n`
  ).join("\n") + extra;
}

Deno.test("debian pins: the mpi rootfs is built from the checked-in list, every package as package=version", async () => {
  assert.equal(MPI_ROOTFS.pins, PIN_FILE);
  const pins = await readPins(PIN_FILE);
  assert.ok(pins.size > 100, `${pins.size} pins: minbase alone has about 100 packages`);
  const cmd = await mmdebstrapCommand(MPI_ROOTFS, "/target");
  const includes = cmd.filter((a) => a.startsWith("--include="));
  assert.equal(includes.length, 1, cmd.join(" "));
  const asked = includes[0].slice("--include=".length).split(",");
  assert.deepEqual(asked, pinnedIncludes(pins), "apt is asked for every pin, and nothing else");
  for (const item of asked) {
    const [pkg, version] = item.split("=");
    assert.equal(pins.get(pkg), version, `${item}: not an exact pinned version`);
  }
});

Deno.test("debian pins: every package the mpi layer asks for is pinned, and minbase's too", async () => {
  const pins = await readPins(PIN_FILE);
  const missing = MPI_ROOTFS.packages.filter((p) => !pins.has(p));
  assert.deepEqual(missing, [], "asked for, not pinned");
  // minbase: the Essential packages, apt, and the required ones; their core must be on the list.
  for (const p of ["apt", "base-files", "bash", "coreutils", "dpkg", "libc6", "mawk", "tar"]) {
    assert.ok(pins.has(p), `${p} (minbase) is not pinned`);
  }
});

Deno.test("debian pins: a rootfs is checked against the list: an unpinned package, another version or a missing one fails", async () => {
  const pins = await readPins(PIN_FILE);
  const dir = await Deno.makeTempDir({ prefix: "debian-pins-" });
  const rootfs = join(dir, "rootfs");
  await Deno.mkdir(join(rootfs, "var/lib/dpkg"), { recursive: true });
  const status = join(rootfs, "var/lib/dpkg/status");
  try {
    await Deno.writeTextFile(status, dpkgStatus(pins));
    await checkPins(MPI_ROOTFS, PIN_FILE, rootfs);

    const other = new Map(pins);
    other.set("libc6", "9.99-1");
    other.delete("tar");
    await Deno.writeTextFile(
      status,
      dpkgStatus(other, "\nPackage: cowsay\nStatus: install ok installed\nVersion: 3.03+dfsg2-8\n"),
    );
    await assert.rejects(
      checkPins(MPI_ROOTFS, PIN_FILE, rootfs),
      (e: Error) => {
        assert.match(
          e.message,
          /the mpi rootfs is not what .*mpi_debian_pins.txt pins \(3 packages\)/,
        );
        const lines = e.message.split("\n").map((l) => l.trim());
        assert.ok(lines.includes("cowsay=3.03+dfsg2-8 installed, not pinned"));
        assert.ok(lines.includes(`libc6=9.99-1 installed, ${pins.get("libc6")} pinned`));
        assert.ok(lines.includes(`tar=${pins.get("tar")} pinned, not installed`));
        assert.match(e.message, /deno run -A hack\/images\/pin_debian_packages\.ts/);
        return true;
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("debian pins: a package the list lacks fails before mmdebstrap runs; a new version makes another rootfs", async () => {
  const pins = await readPins(PIN_FILE);
  const dir = await Deno.makeTempDir({ prefix: "debian-pins-" });
  try {
    const lacking = new Map(pins);
    lacking.delete("openmpi-bin");
    const lackingFile = join(dir, "lacking.txt");
    await Deno.writeTextFile(lackingFile, formatPins(lacking, []));
    await assert.rejects(
      mmdebstrapCommand({ ...MPI_ROOTFS, pins: lackingFile }, "/target"),
      /lacking\.txt does not pin openmpi-bin of the mpi rootfs: refresh it with `deno run -A hack\/images\/pin_debian_packages\.ts`/,
    );

    const newer = new Map(pins);
    newer.set("openmpi-bin", `${pins.get("openmpi-bin")}+1`);
    const newerFile = join(dir, "newer.txt");
    await Deno.writeTextFile(newerFile, formatPins(newer, []));
    const copyFile = join(dir, "copy.txt");
    await Deno.writeTextFile(copyFile, formatPins(pins, ["another header"]));
    const entry = (pins: string) => rootfsEntry({ ...MPI_ROOTFS, pins }).then((e) => e.name);
    assert.equal(await entry(copyFile), await entry(PIN_FILE), "the same pins: the same rootfs");
    assert.notEqual(await entry(newerFile), await entry(PIN_FILE));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("debian pins: the list's format: package=version lines and comments, nothing else", () => {
  const pins = parsePins("# made today\nlibc6=2.36-9+deb12u14\n\nautomake=1:1.16.5-1.3\n");
  assert.deepEqual([...pins], [["libc6", "2.36-9+deb12u14"], ["automake", "1:1.16.5-1.3"]]);
  assert.equal(
    formatPins(pins, ["made today", ""]),
    "# made today\n#\nautomake=1:1.16.5-1.3\nlibc6=2.36-9+deb12u14\n",
  );
  assert.throws(
    () => parsePins("libc6\n", "pins.txt"),
    /pins\.txt:1: not a package=version pin: libc6/,
  );
  assert.throws(() => parsePins("libc6>=2.36\n"), /not a package=version pin/);
  assert.throws(() => parsePins("libc6=2.36\nlibc6=2.37\n"), /:2: libc6 is pinned twice/);
});

Deno.test("debian pins: apt's simulated installs and dpkg's installed packages are read as package=version", () => {
  const simulated = [
    "NOTE: This is only a simulation!",
    "Inst gcc-12-base (12.2.0-14+deb12u1 Debian:12.13/stable [amd64])",
    "Inst libssl3 [3.0.17-1~deb12u2] (3.0.22-1~deb12u2 Debian-Security:12/stable-security [amd64])",
    "Conf gcc-12-base (12.2.0-14+deb12u1 Debian:12.13/stable [amd64])",
  ].join("\n");
  assert.deepEqual([...simulatedInstalls(simulated)], [
    ["gcc-12-base", "12.2.0-14+deb12u1"],
    ["libssl3", "3.0.22-1~deb12u2"],
  ]);
  const status = "Package: a\nStatus: install ok installed\nVersion: 1\n\n" +
    "Package: b\nStatus: deinstall ok config-files\nVersion: 2\n\n" +
    "Package: c\nVersion: 3\nStatus: install ok installed\n";
  assert.deepEqual([...installedPackages(status)], [["a", "1"], ["c", "3"]]);
  assert.deepEqual(pinProblems(new Map([["a", "1"], ["c", "3"]]), installedPackages(status)), []);
});
