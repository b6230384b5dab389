/**
 * A spack-like view of an install: the install's directory tree rebuilt with real directories,
 * every file (or symlink) in it a symlink to the same path inside the install. The operator's
 * flux-view init script copies the view with `cp -R` (links stay links, directories are copied)
 * and finds the view's Python with `find -type d -path .../lib/python3*`, which only sees real
 * directories; the links point at /opt/software/..., which the Flux containers restore.
 */

export interface TreeEntry {
  /** Relative to the install's root, "/"-separated, e.g. "lib/python3.11". */
  path: string;
  kind: "dir" | "file" | "symlink";
}

export type ViewEntry =
  | { kind: "dir"; path: string }
  | { kind: "link"; path: string; target: string };

/**
 * What the view of an install consists of: a directory for each directory, parents first, and a
 * link to `${installPath}/${path}` for everything else. `installPath` is where the install is in
 * the image (absolute), not where it is on this machine.
 */
export function viewEntries(tree: readonly TreeEntry[], installPath: string): ViewEntry[] {
  const sorted = [...tree].sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  return sorted.map((entry): ViewEntry =>
    entry.kind === "dir"
      ? { kind: "dir", path: entry.path }
      : { kind: "link", path: entry.path, target: `${installPath}/${entry.path}` }
  );
}

/** The tree below `root` (not following symlinks), as viewEntries wants it. */
async function readTree(root: string, prefix = ""): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [];
  for await (const item of Deno.readDir(prefix ? `${root}/${prefix}` : root)) {
    const path = prefix ? `${prefix}/${item.name}` : item.name;
    if (item.isDirectory) {
      entries.push({ kind: "dir", path }, ...await readTree(root, path));
    } else {
      entries.push({ kind: item.isSymlink ? "symlink" : "file", path });
    }
  }
  return entries;
}

/** Creates the view of the install at `installDir` (seen in the image at `installPath`) in `viewDir`. */
export async function writeView(
  installDir: string,
  installPath: string,
  viewDir: string,
): Promise<number> {
  const entries = viewEntries(await readTree(installDir), installPath);
  await Deno.mkdir(viewDir, { recursive: true });
  for (const entry of entries) {
    if (entry.kind === "dir") await Deno.mkdir(`${viewDir}/${entry.path}`);
    else await Deno.symlink(entry.target, `${viewDir}/${entry.path}`);
  }
  return entries.length;
}
