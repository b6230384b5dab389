/**
 * deno.lock is enforced: deno.json freezes it, so a run that would change it (a dependency not in
 * the lock, e.g. with the repository's config from outside the tree) fails instead of rewriting it.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("./../..", import.meta.url));
const LOCK = `${ROOT}deno.lock`;

Deno.test("lockfile: deno.json freezes deno.lock", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  assert.deepEqual(config.lock, { frozen: true });
});

Deno.test("lockfile: a run with the repository's config that would change the lock fails", async () => {
  const before = await Deno.readFile(LOCK);
  const dir = await Deno.makeTempDir();
  try {
    // yaml is in the lock at one version; this range is a new specifier the lock would gain. It
    // resolves from Deno's cache (the suite has loaded yaml), so no network is needed.
    await Deno.writeTextFile(`${dir}/drift.ts`, 'import "npm:yaml@^2.0.0";\n');
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--config", `${ROOT}deno.json`, `${dir}/drift.ts`],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.ok(!out.success, "the run must fail");
    assert.match(stderr, /The lockfile is out of date/);
    assert.deepEqual(await Deno.readFile(LOCK), before, "deno.lock is unchanged");
  } finally {
    // Were the lock not frozen, the run above rewrote it: put it back for the rest of the suite.
    await Deno.writeFile(LOCK, before);
    await Deno.remove(dir, { recursive: true });
  }
});
