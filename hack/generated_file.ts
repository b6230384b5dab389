/**
 * What the generators (hack/generate.ts, hack/cluster-role.ts, hack/install-manifest.ts,
 * hack/chart.ts, hack/api-docs.ts, hack/layout-docs.ts, hack/object-diagram.ts) share: their
 * output is formatted exactly as `deno fmt` formats the tree, and `--check` compares it with the
 * committed file instead of writing it, so CI fails when a generated file is stale.
 */

const ROOT = new URL("../", import.meta.url);

/** Formats `text` as `deno fmt` formats a file with extension `ext` in this repository. */
export async function denoFmt(text: string, ext: "ts" | "md" | "yaml" | "svg"): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", `--ext=${ext}`, "-"],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) throw new Error(`deno fmt: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

/**
 * Writes `wanted` to `relPath` (relative to the repository root), or with `check` only compares:
 * returns the exit code (1 when the committed file is stale; `regenerate` says how to fix it).
 */
export async function writeOrCheck(
  relPath: string,
  wanted: string,
  opts: { check: boolean; regenerate: string },
): Promise<number> {
  const path = new URL(relPath, ROOT);
  if (opts.check) {
    let current = "";
    try {
      current = await Deno.readTextFile(path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    if (current !== wanted) {
      console.error(`${relPath} is stale: run \`${opts.regenerate}\``);
      return 1;
    }
    console.error(`${relPath} is up to date`);
    return 0;
  }
  await Deno.writeTextFile(path, wanted);
  console.error(`wrote ${relPath}`);
  return 0;
}
