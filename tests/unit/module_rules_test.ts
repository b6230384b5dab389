/**
 * The module rules `deno task check` enforces (hack/module_rules.ts): an import cycle, a word of
 * the operator's domain in runtime/ and an import its folder's row (hack/folders.ts) does not
 * allow are reported, on a graph given by hand and on a small repository
 * written to disk and read through `deno info`, as the check reads this one.
 */
import assert from "node:assert/strict";
import {
  checkModuleRules,
  foldersWithoutRules,
  forbiddenImports,
  forbiddenNames,
  importCycles,
  moduleGraph,
} from "../../hack/module_rules.ts";

Deno.test("module rules: a cycle is reported as the path that closes it, once", () => {
  const graph = new Map([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["c.ts", "d.ts"]],
    ["c.ts", ["a.ts"]],
    ["d.ts", []],
    ["e.ts", ["e.ts"]],
  ]);
  assert.deepEqual(importCycles(graph), [["a.ts", "b.ts", "c.ts", "a.ts"], ["e.ts", "e.ts"]]);
  assert.deepEqual(importCycles(new Map([["a.ts", ["b.ts"]], ["b.ts", []]])), []);
});

Deno.test("module rules: a domain word in a runtime file is found with its line, in any case", () => {
  const found = forbiddenNames([
    { path: "runtime/a.ts", text: "// generic\nconst agent = 'MiniCluster-operator';\n" },
    { path: "runtime/b.ts", text: "export const Flux = 1; // Curve\n" },
    { path: "runtime/c.ts", text: "export const watcher = 1;\n" },
  ]);
  assert.deepEqual(found, [
    { path: "runtime/a.ts", line: 2, word: "MiniCluster" },
    { path: "runtime/b.ts", line: 1, word: "Flux" },
    { path: "runtime/b.ts", line: 1, word: "Curve" },
  ]);
});

Deno.test("module rules: deno info's graph has type imports and re-exports, not dynamic imports", async () => {
  const root = await repository({
    "runtime/a.ts": `import type { B } from "./b.ts";\nexport type A = B;\n`,
    "runtime/b.ts": `export type { A as B } from "./a.ts";\n`,
    "runtime/c.ts": `export const c = () => import("./d.ts");\n`,
    "runtime/d.ts": `import { c } from "./c.ts";\nexport const d = c;\n`,
  });
  try {
    const graph = await moduleGraph(root, ["runtime/a.ts", "runtime/c.ts"]);
    assert.deepEqual(Object.fromEntries(graph), {
      "runtime/a.ts": ["runtime/b.ts"],
      "runtime/b.ts": ["runtime/a.ts"],
      "runtime/c.ts": [],
      "runtime/d.ts": ["runtime/c.ts"],
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("module rules: a repository with a cycle and a domain name in runtime/ fails the check", async () => {
  const root = await repository({
    "mod.ts": `import "./runtime/client/client.ts";\nimport "./controllers/x.ts";\n`,
    "runtime/client/client.ts": `export const userAgent = "flux-operator";\n`,
    "controllers/x.ts": `import { y } from "./y.ts";\nexport const x = 1 + y;\n`,
    "controllers/y.ts": `import { x } from "./x.ts";\nexport const y = () => x;\n`,
  });
  try {
    assert.deepEqual(await checkModuleRules(root), [
      "import cycle: controllers/x.ts → controllers/y.ts → controllers/x.ts",
      `runtime/client/client.ts:1: "flux" in runtime/, which knows nothing of MiniClusters`,
    ]);
    await Deno.writeTextFile(
      new URL("runtime/client/client.ts", root),
      `export const agent = "op";\n`,
    );
    await Deno.writeTextFile(new URL("controllers/y.ts", root), `export const y = 2;\n`);
    assert.deepEqual(await checkModuleRules(root), []);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("module rules: a repository whose runtime imports upwards or out of runtime/ fails the check", async () => {
  const root = await repository({
    "mod.ts": `import "./runtime/core/clock.ts";\nimport "./runtime/client/client.ts";\n`,
    "runtime/core/clock.ts": `import { x } from "../../api/x.ts";\nexport const now = x;\n`,
    "runtime/client/client.ts": `import { w } from "../watch/w.ts";\nexport const c = w;\n`,
    "runtime/watch/w.ts": `export const w = 1;\n`,
    "api/x.ts": `export const x = 1;\n`,
    "runtime/extra/e.ts": `export const e = 1;\n`,
  });
  try {
    assert.deepEqual(await checkModuleRules(root), [
      "import not allowed by hack/folders.ts: runtime/client/client.ts → runtime/watch/w.ts",
      "import not allowed by hack/folders.ts: runtime/core/clock.ts → api/x.ts",
      "folder runtime/extra/ has no row in hack/folders.ts (what it holds, what it may import)",
    ]);
    await Deno.writeTextFile(new URL("runtime/core/clock.ts", root), `export const now = 1;\n`);
    await Deno.writeTextFile(new URL("runtime/client/client.ts", root), `export const c = 1;\n`);
    await Deno.remove(new URL("runtime/extra/", root), { recursive: true });
    assert.deepEqual(await checkModuleRules(root), []);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("module rules: the folders' table allows its listed folders and files, nothing else", () => {
  const graph = new Map([
    ["runtime/watch/watcher.ts", ["runtime/client/client.ts", "runtime/watch/watch_step.ts"]],
    ["runtime/core/log.ts", ["api/mod.ts"]],
    ["api/resource.ts", ["runtime/client/resources.ts", "runtime/controller/controller.ts"]],
    ["controllers/minicluster/children/scripts/parts/cores.ts", [
      "controllers/minicluster/kinds/diff.ts",
      "controllers/minicluster/kinds/child_kinds.ts",
    ]],
    ["controllers/minicluster/render/render.ts", ["runtime/client/client.ts"]],
    ["controllers/minicluster/reconciler.ts", ["runtime/manager.ts"]],
    ["tests/unit/a_test.ts", ["runtime/manager.ts"]],
  ]);
  assert.deepEqual(forbiddenImports(graph), [
    "api/resource.ts → runtime/controller/controller.ts",
    "controllers/minicluster/children/scripts/parts/cores.ts → controllers/minicluster/kinds/child_kinds.ts",
    "controllers/minicluster/render/render.ts → runtime/client/client.ts",
    "runtime/core/log.ts → api/mod.ts",
  ]);
  assert.deepEqual(
    foldersWithoutRules(["runtime/new/x.ts", "tests/a.ts", "controllers/minicluster/kinds/a.ts"]),
    ["runtime/new"],
  );
});

/** A temporary repository with a deno.json and the given files; its URL ends in "/". */
async function repository(files: Record<string, string>): Promise<URL> {
  const dir = await Deno.makeTempDir({ prefix: "module-rules-test-" });
  const root = new URL(`file://${dir}/`);
  await Deno.writeTextFile(new URL("deno.json", root), "{}\n");
  for (const [path, text] of Object.entries(files)) {
    await Deno.mkdir(new URL(".", new URL(path, root)), { recursive: true });
    await Deno.writeTextFile(new URL(path, root), text);
  }
  return root;
}
