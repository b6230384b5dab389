/**
 * The unit tier's runner (hack/test_unit.ts): it prints the tier's wall time and fails when the
 * tier is over its budget, also when every test passed, and when a test fails within it.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  budgetVerdict,
  parseArgs,
  UNIT_BUDGET_SECONDS,
  UNIT_TIER,
  unitTestArgs,
} from "../../hack/test_unit.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

Deno.test("unit budget: a minute, said with the wall time, and over it is a failure", () => {
  assert.equal(UNIT_BUDGET_SECONDS, 60);
  assert.deepEqual(budgetVerdict(59.94), {
    line: "unit tier: 59.9 s wall (budget 60 s)",
    over: false,
  });
  assert.deepEqual(budgetVerdict(60.5), {
    line: "unit tier: 60.5 s wall, over its budget of 60 s",
    over: true,
  });
  assert.equal(budgetVerdict(3, 2).over, true);
});

Deno.test("unit budget: the runner's flags go to deno test, paths replace the tier", () => {
  assert.deepEqual(parseArgs([]), { flags: [], paths: [UNIT_TIER], budget: 60 });
  assert.deepEqual(parseArgs(["--filter", "watch", "--budget-seconds=5", "tests/unit/x_test.ts"]), {
    flags: ["--filter", "watch"],
    paths: ["tests/unit/x_test.ts"],
    budget: 5,
  });
  assert.deepEqual(parseArgs(["--filter=a b"]).flags, ["--filter=a b"]);
  assert.throws(() => parseArgs(["--budget-seconds=soon"]), /bad budget/);
  assert.deepEqual(unitTestArgs(), ["test", "-A", "--parallel", UNIT_TIER]);
});

/** The runner over a folder of its own tests: its exit code and what it printed. */
async function runner(tests: Record<string, string>, args: string[]) {
  const dir = await Deno.makeTempDir({ prefix: "unit-budget-" });
  try {
    for (const [name, text] of Object.entries(tests)) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "hack/test_unit.ts", ...args, dir],
      cwd: ROOT,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = (b: Uint8Array) => new TextDecoder().decode(b);
    return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const PASSING = `Deno.test("passes", () => {});\n`;
const SLOW = `Deno.test("takes a while", () => new Promise((r) => setTimeout(r, 300)));\n`;
const FAILING = `Deno.test("fails", () => { throw new Error("no"); });\n`;

Deno.test("unit budget: the runner prints the wall time and passes within the budget", async () => {
  const r = await runner({ "a_test.ts": PASSING }, []);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /1 passed \| 0 failed/);
  assert.match(r.stdout, /^unit tier: \d+\.\d s wall \(budget 60 s\)$/m);
});

Deno.test("unit budget: the runner fails a tier over its budget, every test passed", async () => {
  const r = await runner({ "a_test.ts": PASSING, "b_test.ts": SLOW }, ["--budget-seconds=0.2"]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /2 passed \| 0 failed/);
  assert.match(r.stdout, /^unit tier: \d+\.\d s wall, over its budget of 0\.2 s$/m);
});

Deno.test("unit budget: the runner fails a failing test within the budget", async () => {
  const r = await runner({ "a_test.ts": PASSING, "b_test.ts": FAILING }, []);
  assert.notEqual(r.code, 0);
  assert.match(r.stdout, /1 passed \| 1 failed/);
  assert.match(r.stdout, /^unit tier: \d+\.\d s wall \(budget 60 s\)$/m);
});
