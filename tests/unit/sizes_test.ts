/**
 * Sizes are one value: spec.size and spec.maxSize default in api/defaults.ts alone, the reconciler
 * decides the sizing from them and the workspace, and every builder that needs a size takes that
 * sizing beside the spec, which nothing rewrites.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { specSizes, withDefaults } from "../../api/mod.ts";
import { buildEntrypointConfigMap } from "../../controllers/minicluster/children/entrypoint.ts";
import { buildPodGroup } from "../../controllers/minicluster/children/gang.ts";
import { buildJob } from "../../controllers/minicluster/children/job.ts";
import { desiredChildren } from "../../controllers/minicluster/kinds/desired.ts";
import { defaultedMiniCluster } from "./fixtures.ts";

const REPO = new URL("../../", import.meta.url).pathname;

/** Asked for 4 of up to 6; the workspace fixed 5, and the reconciler runs 2 (4 tasks on them). */
const spec = {
  size: 4,
  maxSize: 6,
  tasks: 4,
  gang: {},
  containers: [{ image: "app", command: "hostname" }],
};
const sizing = { effectiveSize: 2, maximumSize: 5 };

Deno.test("sizes: the builders size the children from the sizing, never from the spec", async () => {
  const mc = defaultedMiniCluster(spec);
  const before = structuredClone(mc);
  const job = buildJob(mc, sizing);
  assert.equal(job.spec?.parallelism, 2);
  assert.equal(job.spec?.completions, 2);
  const scripts = buildEntrypointConfigMap(mc, sizing).data ?? {};
  assert.match(scripts["flux-view"], /hosts='flux-sample-\[0-4\]'/, "written for the maximum");
  assert.match(scripts["wait-0"], /flags=\(-N 2 -n4\)/, "flux submit -N: the effective size");
  assert.match(scripts["wait-0"], /-Sbroker\.quorum=2/, "a cluster that may grow waits for 2");
  assert.equal(buildPodGroup(mc, sizing)?.spec?.schedulingPolicy?.gang?.minCount, 2);
  const desired = await desiredChildren(mc, sizing);
  assert.equal(desired.job.spec?.parallelism, 2);
  assert.equal(desired.configMap.data?.["flux-view"], scripts["flux-view"]);
  assert.equal(desired.podGroup?.spec?.schedulingPolicy?.gang?.minCount, 2);
  assert.deepEqual(mc, before, "the spec the builders were given is left as it was");
});

Deno.test("sizes: specSizes is what withDefaults gives spec.size and spec.maxSize", () => {
  const cases = [{}, { size: 3 }, { size: 3, maxSize: 0 }, { size: 3, maxSize: 7 }, {
    maxSize: 2,
  }];
  for (const given of cases) {
    const mc = withDefaults({
      apiVersion: "flux-framework.org/v1alpha2",
      kind: "MiniCluster",
      metadata: { name: "m", namespace: "ns" },
      spec: { containers: [{}], ...given },
    });
    assert.deepEqual(specSizes(given), { size: mc.spec.size, maxSize: mc.spec.maxSize });
  }
  assert.deepEqual(specSizes(undefined), { size: 1, maxSize: 1 });
});

/** The operator's own code: what builds children and decides sizes (tests keep their oracles). */
const OPERATOR_DIRS = ["controllers", "api", "bench"];
/** The one place spec.size and spec.maxSize get their defaults. */
const DEFAULTING = "api/defaults.ts";

/** Patterns of a size defaulted again, or written into a copy of the spec. */
const SECOND_DEFAULTS: [RegExp, string][] = [
  [/spec\??\.(size|maxSize)\s*(\?\?|\|\|)/, "spec.size or spec.maxSize defaulted"],
  [/\bmaxSize\s*\|\|/, "a maximum defaulted to the size"],
  [/\?\?\s*[\w.?]*spec\??\.size\b/, "spec.size as a fallback for another size"],
  [/spec:\s*\{\s*\.\.\.[\w.?]*spec,[^}]*\b(size|maxSize)\s*:/, "a size written into a spec"],
];

async function* sourceFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(join(REPO, dir))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory && entry.name !== "results") yield* sourceFiles(path);
    else if (entry.isFile && entry.name.endsWith(".ts")) yield path;
  }
}

Deno.test("sizes: spec.size is defaulted in api/defaults.ts alone and no spec is rewritten with sizes", async () => {
  const found: string[] = [];
  for (const dir of OPERATOR_DIRS) {
    for await (const path of sourceFiles(dir)) {
      if (path === DEFAULTING) continue;
      const lines = (await Deno.readTextFile(join(REPO, path))).split("\n");
      lines.forEach((line, i) => {
        for (const [pattern, what] of SECOND_DEFAULTS) {
          if (pattern.test(line)) found.push(`${path}:${i + 1}: ${what}: ${line.trim()}`);
        }
      });
    }
  }
  assert.deepEqual(found, []);
});

Deno.test("sizes: the patterns of a second default find one", async () => {
  const defaulting = await Deno.readTextFile(join(REPO, DEFAULTING));
  const [spec, maximum, fallback, rewrite] = SECOND_DEFAULTS.map(([pattern]) => pattern);
  assert.match(defaulting, spec);
  assert.match(defaulting, maximum);
  assert.match("const size = opts.size ?? mc.spec.size;", fallback);
  assert.match("spec: { ...mc.spec, size: sizing.size, maxSize: sizing.maxSize },", rewrite);
});
