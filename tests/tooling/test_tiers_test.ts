/**
 * The test tiers a developer runs one at a time: every folder of tests/ that holds tests has its
 * `deno task test:<folder>`, the README's Tests section names each, the unit tier imports
 * nothing that starts or needs a cluster (`deno task test:unit` runs on a machine without one), and
 * it runs through its budget's runner, in `deno task test:unit` and in `./task test` alike.
 */
import assert from "node:assert/strict";
import { TEST_RUNS } from "../../hack/test.ts";
import { UNIT_TIER, unitTestArgs } from "../../hack/test_unit.ts";

const ROOT = new URL("../../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, ROOT));

/** The folders of tests/ with a *_test.ts file in them. */
function testFolders(): string[] {
  const folders: string[] = [];
  for (const entry of Deno.readDirSync(new URL("tests/", ROOT))) {
    if (!entry.isDirectory) continue;
    const files = [...Deno.readDirSync(new URL(`tests/${entry.name}/`, ROOT))];
    if (files.some((f) => f.isFile && f.name.endsWith("_test.ts"))) folders.push(entry.name);
  }
  return folders.sort();
}

Deno.test("test tiers: each folder of tests/ with tests is one deno task test:<folder>", () => {
  const tasks: Record<string, string> = JSON.parse(read("deno.json")).tasks;
  const tiers = Object.entries(tasks).filter(([name]) => name.startsWith("test:"));
  assert.deepEqual(
    tiers.map(([name]) => name.slice("test:".length)).sort(),
    testFolders(),
    "a test:<folder> task per folder of tests/ that holds *_test.ts files",
  );
  for (const [name, command] of tiers) {
    const folder = `tests/${name.slice("test:".length)}/`;
    // The unit tier's runner times it against its budget (hack/test_unit.ts).
    if (folder === UNIT_TIER) assert.equal(command, "deno run -A hack/test_unit.ts");
    else assert.equal(command, `deno test -A ${folder}`);
  }
});

Deno.test("test tiers: ./task test runs the unit tier once, as its runner does, and every other tier", () => {
  assert.deepEqual(TEST_RUNS.unit, unitTestArgs());
  assert.equal(TEST_RUNS.unit.at(-1), UNIT_TIER);
  assert.deepEqual(TEST_RUNS.cluster, ["test", "-A", `--ignore=${UNIT_TIER}`, "tests/"]);
});

Deno.test("test tiers: the README's Tests section names every tier and its folder", () => {
  const readme = read("README.md");
  // "Tests" under "Develop this project", to the next heading.
  const start = readme.search(/\n#+ Tests\n/);
  assert.ok(start >= 0, "the README has a Tests section");
  const next = readme.slice(start + 1).search(/\n#+ /);
  const section = readme.slice(start, next < 0 ? undefined : start + 1 + next);
  for (const folder of testFolders()) {
    assert.ok(
      section.includes(`- \`deno task test:${folder}\` (\`tests/${folder}\``),
      `README: Tests lists deno task test:${folder} (tests/${folder})`,
    );
  }
});

/** What starts a cluster, or finds one to use: none of it belongs in the unit tier. */
const CLUSTER_MODULES = [
  "testing/private_cluster.ts",
  "testing/operator_process.ts",
  "testing/in_cluster_install.ts",
  "hack/cluster/lifecycle.ts",
  "tests/e2e/env.ts",
  "tests/real/env.ts",
];
const CLUSTER_HELPERS = ["kubeconfigPath", "integrationTest", "fullCluster"];

Deno.test("test tiers: the unit tier imports nothing that starts or needs a cluster", () => {
  const found: string[] = [];
  for (const entry of Deno.readDirSync(new URL("tests/unit/", ROOT))) {
    if (!entry.isFile || !entry.name.endsWith(".ts")) continue;
    const text = read(`tests/unit/${entry.name}`);
    for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+"([^"]+)"/g)) {
      const [, names, from] = m;
      const target = new URL(from, new URL(`tests/unit/${entry.name}`, ROOT)).href
        .slice(ROOT.href.length);
      if (CLUSTER_MODULES.includes(target)) found.push(`${entry.name} imports ${target}`);
      if (target === "tests/harness.ts") {
        const used = names.split(",").map((n) => n.trim().replace(/^type\s+/, ""));
        for (const helper of CLUSTER_HELPERS.filter((h) => used.includes(h))) {
          found.push(`${entry.name} imports ${helper} from tests/harness.ts`);
        }
      }
    }
  }
  assert.deepEqual(found, []);
});
