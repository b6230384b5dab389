/**
 * Static checks of crds/minicluster.yaml: parity with the Go Flux Operator's v1alpha2 schema (every
 * field it accepts, with the same type and default) and documentation (every field described, so
 * `kubectl explain` documents it). tests/fixtures/go-v1alpha2-fields.json lists the Go operator's
 * field paths, types and defaults, extracted from its generated CRD
 * (config/crd/bases/flux-framework.org_miniclusters.yaml).
 */
import type { OpenApiSchema } from "../../api/openapi_schema.ts";
import assert from "node:assert/strict";
import { parse } from "yaml";

const ROOT = new URL("../../", import.meta.url);

type Schema = OpenApiSchema;
interface Field {
  type?: string;
  default?: unknown;
}

const crd = parse(await Deno.readTextFile(new URL("crds/minicluster.yaml", ROOT)));
const schema: Schema = crd.spec.versions[0].schema.openAPIV3Schema;
const goFields: Record<string, Field> = JSON.parse(
  await Deno.readTextFile(new URL("tests/fixtures/go-v1alpha2-fields.json", ROOT)),
);

/** Every node below the root by path: "spec.containers[].volumes{}.path". */
function fields(root: Schema): Map<string, Schema> {
  const out = new Map<string, Schema>();
  const walk = (node: Schema, path: string) => {
    if (path) out.set(path, node);
    for (const [k, v] of Object.entries(node.properties ?? {})) walk(v, path ? `${path}.${k}` : k);
    if (node.items) walk(node.items, `${path}[]`);
    if (typeof node.additionalProperties === "object") walk(node.additionalProperties, `${path}{}`);
  };
  walk(root, "");
  return out;
}

const ours = fields(schema);

/**
 * Defaults we add where the Go CRD has none. Empty parents default to {} so their children's
 * defaults show up in the stored object; fcfs is what the Go operator fills in at reconcile time.
 * Not spec.flux: defaulting it would give every MiniCluster connectTimeout's 5s, which Go's CRD
 * applies only when spec.flux is written (without it the brokers keep Flux's own timeout).
 */
const ADDED_DEFAULTS: Record<string, unknown> = {
  "spec.flux.container": {},
  "spec.flux.scheduler": {},
  "spec.flux.scheduler.queuePolicy": "fcfs",
  "spec.logging": {},
};

Deno.test("every field of the Go operator's v1alpha2 exists with the same type and default", () => {
  const problems: string[] = [];
  for (const [path, go] of Object.entries(goFields)) {
    const node = ours.get(path);
    if (!node) {
      problems.push(`${path}: missing`);
      continue;
    }
    const type = node.type ?? (node["x-kubernetes-int-or-string"] ? "int-or-string" : undefined);
    if (type !== go.type) problems.push(`${path}: type ${type}, Go has ${go.type}`);
    const expected = path in ADDED_DEFAULTS ? ADDED_DEFAULTS[path] : go.default;
    if (JSON.stringify(node.default) !== JSON.stringify(expected)) {
      problems.push(
        `${path}: default ${JSON.stringify(node.default)}, expected ${JSON.stringify(expected)}`,
      );
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("every field has a description", () => {
  const undocumented = [...ours].filter(([path, node]) => path !== "metadata" && !node.description)
    .map(([path]) => path);
  assert.deepEqual(undocumented, []);
});

Deno.test("the CRD serves v1alpha2 with status and scale subresources and short name mc", () => {
  assert.equal(crd.metadata.name, "miniclusters.flux-framework.org");
  assert.equal(crd.spec.scope, "Namespaced");
  assert.deepEqual(crd.spec.names.shortNames, ["mc"]);
  const [version] = crd.spec.versions;
  assert.equal(version.name, "v1alpha2");
  assert.ok(version.served && version.storage);
  assert.deepEqual(version.subresources, {
    status: {},
    scale: {
      specReplicasPath: ".spec.size",
      statusReplicasPath: ".status.size",
      labelSelectorPath: ".status.selector",
    },
  });
});

Deno.test("every default is stated in its field's description (kubectl explain omits defaults)", () => {
  const unstated = [...ours].filter(([, node]) =>
    node.default !== undefined && typeof node.default !== "object" &&
    !node.description?.includes(`Defaults to ${node.default}`)
  ).map(([path]) => path);
  assert.deepEqual(unstated, []);
});
