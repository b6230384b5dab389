/**
 * A pinned Debian package set: a checked-in list of `package=version` lines (one a line, `#`
 * comments) naming every package a rootfs holds, so that two builds of an image install the same
 * versions. A rootfs built from it gets each pinned version from apt (`--include=package=version`:
 * apt fails with "Version … was not found" once Debian dropped it) and is then compared with the
 * list (`pinProblems`): a package apt installed beyond the list, or at another version, fails the
 * build. `pin_debian_packages.ts` writes the list from what apt would install today.
 */

/** The pins of a list: package → version. Throws on a line that is no pin or a package twice. */
export function parsePins(text: string, source = "the pin list"): Map<string, string> {
  const pins = new Map<string, string>();
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const m = line.match(/^([a-z0-9][a-z0-9+.-]+)=([0-9][A-Za-z0-9.+~:-]*)$/);
    if (!m) throw new Error(`${source}:${i + 1}: not a package=version pin: ${line}`);
    if (pins.has(m[1])) throw new Error(`${source}:${i + 1}: ${m[1]} is pinned twice`);
    pins.set(m[1], m[2]);
  });
  return pins;
}

/** The list's text: `header` as comments, then the pins sorted by package. */
export function formatPins(pins: ReadonlyMap<string, string>, header: readonly string[]): string {
  const lines = [...pins].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([p, v]) =>
    `${p}=${v}`
  );
  return [...header.map((h) => h === "" ? "#" : `# ${h}`), ...lines, ""].join("\n");
}

/** The pins read from `path`. */
export async function readPins(path: string): Promise<Map<string, string>> {
  return parsePins(await Deno.readTextFile(path), path);
}

/** apt's arguments that install exactly the pinned versions: `package=version` each. */
export function pinnedIncludes(pins: ReadonlyMap<string, string>): string[] {
  return [...pins].map(([p, v]) => `${p}=${v}`).sort();
}

/** The requested packages the pins do not name (each must be pinned, or the list is stale). */
export function unpinned(
  requested: readonly string[],
  pins: ReadonlyMap<string, string>,
): string[] {
  return [...new Set(requested)].filter((p) => !pins.has(p)).sort();
}

/** package → version of what a dpkg status file (`/var/lib/dpkg/status`) says is installed. */
export function installedPackages(status: string): Map<string, string> {
  const installed = new Map<string, string>();
  for (const stanza of status.split(/\n\s*\n/)) {
    const field = (name: string) => stanza.match(new RegExp(`^${name}: (.*)$`, "m"))?.[1].trim();
    const pkg = field("Package");
    const version = field("Version");
    if (pkg && version && field("Status") === "install ok installed") installed.set(pkg, version);
  }
  return installed;
}

/**
 * How an installed package set differs from the pins, one line per package: installed but not
 * pinned, installed at another version, pinned but not installed. Empty: exactly the pins.
 */
export function pinProblems(
  pins: ReadonlyMap<string, string>,
  installed: ReadonlyMap<string, string>,
): string[] {
  const problems: string[] = [];
  for (const [pkg, version] of [...installed].sort(([a], [b]) => a < b ? -1 : 1)) {
    const pinned = pins.get(pkg);
    if (pinned === undefined) problems.push(`${pkg}=${version} installed, not pinned`);
    else if (pinned !== version) problems.push(`${pkg}=${version} installed, ${pinned} pinned`);
  }
  for (const [pkg, version] of pins) {
    if (!installed.has(pkg)) problems.push(`${pkg}=${version} pinned, not installed`);
  }
  return problems;
}
