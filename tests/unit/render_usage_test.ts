/**
 * The `render` command as users find and run it: `--help` names it, and the permissions mod.ts's
 * usage line gives it are the `render` task's (deno.json), each of them needed and together
 * enough to render an example.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** `deno <args>` from the repository root: exit success and both outputs. */
async function deno(args: string[]): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { ok: out.success, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** The permission flags of a `deno run <flags> mod.ts render` command line. */
function renderPermissions(line: string, where: string): string[] {
  const m = /deno run ((?:--allow-[a-z-]+(?:=\S+)? )+)mod\.ts render/.exec(line);
  assert.ok(m, `${where} has no "deno run --allow-... mod.ts render" line`);
  return m[1].trim().split(/\s+/).sort();
}

const fromTask = renderPermissions(
  JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)).tasks.render,
  "deno.json's render task",
);
const fromModule = renderPermissions(Deno.readTextFileSync(`${ROOT}mod.ts`), "mod.ts");

Deno.test("render command: --help names it", async () => {
  const help = await deno(["run", ...fromTask, "mod.ts", "--help"]);
  assert.ok(help.ok, help.stderr);
  assert.match(help.stdout, /^Usage: minicluster-operator \[flags\]/);
  assert.match(help.stdout, /`minicluster-operator render -f FILE` prints/);
});

Deno.test("render command: mod.ts's usage line and the render task grant the same", () => {
  assert.deepEqual(fromModule, fromTask);
});

Deno.test("render command: those permissions render an example, and each is needed", async () => {
  const render = (flags: string[]) =>
    deno(["run", ...flags, "mod.ts", "render", "-f", "examples/hello-world.yaml"]);
  const full = await render(fromTask);
  assert.ok(full.ok, full.stderr);
  assert.match(full.stdout, /^kind: Job$/m);
  for (const flag of fromTask) {
    const without = await render(fromTask.filter((f) => f !== flag));
    assert.ok(!without.ok, `render ran without ${flag}`);
    assert.match(without.stderr, /NotCapable|Requires .* access/, without.stderr);
  }
});
