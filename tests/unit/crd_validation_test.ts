// api/crd_validation.ts without an API server: every fixture the API server accepts passes, every
// one it refuses gets the messages the fixtures expect of the API server, and the CRD's rules are
// all within the part of CEL api/cel.ts evaluates. tests/integration/render_messages_test.ts
// compares the messages with a real API server's in full.

import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { compileCel } from "../../api/cel.ts";
import { applyErrors, crdValidationErrors, type OpenApiSchema } from "../../api/crd_validation.ts";
import {
  MINICLUSTER_SCHEMA,
  MINICLUSTER_SPEC_REPLICAS_PATH,
} from "../../api/minicluster_schema.ts";

const check = (mc: unknown) => applyErrors(mc, MINICLUSTER_SCHEMA, MINICLUSTER_SPEC_REPLICAS_PATH);
import { loadCorpus } from "../generated/bad_input_corpus.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function manifests(dir: string): Promise<{ file: string; text: string; docs: unknown[] }[]> {
  const out = [];
  for await (const e of Deno.readDir(join(ROOT, dir))) {
    if (!e.name.endsWith(".yaml")) continue;
    const text = await Deno.readTextFile(join(ROOT, dir, e.name));
    out.push({ file: e.name, text, docs: parseAllDocuments(text).map((d) => d.toJS()) });
  }
  return out;
}

const rules = (s: OpenApiSchema): string[] =>
  JSON.stringify(s).match(/"rule":"(?:[^"\\]|\\.)*"/g)!.map((r) => JSON.parse(`{${r}}`).rule);

Deno.test("crd validation: every rule of the CRD compiles", () => {
  const all = rules(MINICLUSTER_SCHEMA);
  assert.ok(all.length >= 20, `${all.length} rules`);
  for (const rule of all) compileCel(rule);
});

Deno.test("crd validation: what the API server accepts passes", async () => {
  const valid = [
    ...(await manifests("tests/fixtures/manifests/valid")),
    ...(await manifests("examples")),
  ].flatMap((m) => m.docs.filter((d) => (d as { kind?: string })?.kind === "MiniCluster"));
  const corpus = (await loadCorpus()).filter((c) => c.outcome !== "rejected");
  assert.ok(valid.length >= 10 && corpus.length >= 50);
  for (const mc of [...valid, ...corpus.map((c) => c.miniCluster)]) {
    assert.deepEqual(
      check(mc),
      [],
      JSON.stringify(mc).slice(0, 200),
    );
  }
});

Deno.test("crd validation: what the API server refuses gets its messages", async () => {
  const cases = [
    ...(await manifests("tests/fixtures/manifests/invalid")).map((m) => ({
      file: m.file,
      mc: m.docs[0],
      expect: [...m.text.matchAll(/^# expect: (.+)$/gm)].map((x) => x[1].trim()),
    })),
    ...(await loadCorpus())
      // The request's size is refused before any validation.
      .filter((c) => c.outcome === "rejected" && c.file !== "rejected/huge-object.yaml")
      .map((c) => ({ file: c.file, mc: c.miniCluster, expect: c.expect })),
  ];
  const failures: string[] = [];
  for (const c of cases) {
    // tests/integration/crd_test.ts applies the fixtures with strict field validation (as
    // kubectl apply does), bad_input_test.ts the corpus without (unknown fields pruned).
    const errors = [
      ...check(c.mc),
      ...crdValidationErrors(c.mc, MINICLUSTER_SCHEMA, MINICLUSTER_SPEC_REPLICAS_PATH),
    ];
    if (errors.length === 0) failures.push(`${c.file}: passes`);
    for (const want of c.expect) {
      if (!errors.some((e) => e.includes(want))) {
        failures.push(`${c.file}: "${want}" not in ${JSON.stringify(errors)}`);
      }
    }
  }
  assert.deepEqual(failures, []);
});

Deno.test("crd validation: type, bound and rule errors in the API server's words", () => {
  const mc = (spec: Record<string, unknown>) => ({
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "m" },
    spec: { containers: [{ image: "x" }], ...spec },
  });
  assert.deepEqual(check(mc({ size: -3 })), [
    "spec.size: Invalid value: -3: spec.size in body should be greater than or equal to 1",
    // The scale subresource's own check of its replicas field.
    ".spec.size: Invalid value: -3: should be a non-negative integer",
  ]);
  assert.deepEqual(check(mc({ size: 2, maxSize: 1 })), [
    "spec.maxSize: Invalid value: maxSize must be greater than or equal to size " +
    "(or 0, which means maxSize = size)",
  ]);
  const typed = check(mc({ containers: 3 }));
  assert.equal(
    typed[0],
    'spec.containers: Invalid value: "integer": spec.containers in body must be of type array: ' +
      '"integer"',
  );
  // Rules are not evaluated over a value of the wrong type, as by the API server.
  assert.match(typed[1], /^<nil>: .*some validation rules were not checked/);
});

Deno.test("crd validation 1.37: int32 fields name their format; values print as Go 1.37's", () => {
  const mc = (spec: Record<string, unknown>) => ({
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "m" },
    spec: { containers: [{ image: "x" }], ...spec },
  });
  const check = (spec: Record<string, unknown>) =>
    crdValidationErrors(mc(spec), MINICLUSTER_SCHEMA, MINICLUSTER_SPEC_REPLICAS_PATH);
  const notChecked = "<nil>: Invalid value: null: some validation rules were not checked " +
    "because the object was invalid; correct the existing errors to complete validation";
  const float = check({ size: 2.5 });
  assert.deepEqual(float.filter((e) => !e.startsWith(".spec.size")), [
    'spec.size: Invalid value: "float64": spec.size in body must be of type int32: "float64"',
    '<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.size',
    notChecked,
  ]);
  assert.equal(
    check({ size: true })[0],
    'spec.size: Invalid value: "": spec.size in body must be of type int32: ""',
  );
  // A list or a string keeps the plain type check.
  assert.equal(
    check({ size: "four" })[0],
    'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"',
  );
  const claims = check({
    containers: [{ image: "x", resources: { claims: [{ name: "gpu" }, { name: "gpu" }] } }],
  });
  assert.ok(
    claims.includes('spec.containers[0].resources.claims[1]: Duplicate value: {"name":"gpu"}'),
    JSON.stringify(claims),
  );
});
