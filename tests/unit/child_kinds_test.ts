// The table of child kinds (controllers/minicluster/child_kinds.ts) against what depends on it
// outside the code: the ClusterRole of deploy/ and of the chart grants exactly the verbs of each
// row, and each row's verbs cover what the row makes the operator do.
import assert from "node:assert/strict";
import { parse } from "yaml";
import { CHILD_KINDS, childWaves, type Verb } from "../../controllers/minicluster/child_kinds.ts";

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const read = (path: string) => Deno.readTextFileSync(new URL(`../../${path}`, import.meta.url));

/** The rules of a ClusterRole file; Helm's expressions (only in its metadata) stand as text. */
function rules(path: string): Rule[] {
  const text = read(path).replace(/\{\{[^}]*\}\}/g, "templated");
  return parse(text).rules as Rule[];
}

/** Every verb the rules grant on `group`/`resource`, sorted. */
function granted(all: Rule[], group: string, resource: string): string[] {
  const verbs = all
    .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
    .flatMap((r) => r.verbs);
  return [...new Set(verbs)].sort();
}

/** The verbs of every row on `group`/`resource` (two rows may share a resource), sorted. */
function wanted(group: string, resource: string): string[] {
  const verbs = CHILD_KINDS
    .filter((row) => row.rt.group === group && row.rt.plural === resource)
    .flatMap((row) => row.rbac);
  return [...new Set(verbs)].sort();
}

for (
  const path of [
    "deploy/cluster-role.yaml",
    "charts/minicluster-operator/templates/cluster-role.yaml",
  ]
) {
  Deno.test(`child kinds: ${path} grants each kind exactly the verbs of its row`, () => {
    const all = rules(path);
    for (const { rt } of CHILD_KINDS) {
      assert.deepEqual(
        granted(all, rt.group, rt.plural),
        wanted(rt.group, rt.plural),
        `${rt.plural}.${rt.group || "core"}`,
      );
    }
  });
}

Deno.test("child kinds: each row's verbs cover what the row makes the operator do", () => {
  for (const row of CHILD_KINDS) {
    const needs: Verb[] = ["list", "watch"]; // every row is a watch
    // A dependent: created by a create-only apply (create and patch), read when its name is
    // taken, deleted on cleanup (and when pruned or re-created).
    if (row.wave !== undefined) needs.push("get", "create", "patch", "delete");
    if (row.pruned) needs.push("delete");
    for (const verb of needs) assert.ok(row.rbac.includes(verb), `${row.key} needs ${verb}`);
    assert.equal(row.wave !== undefined, row.dependents !== undefined, `${row.key}: wave`);
    assert.equal(row.wave !== undefined, row.cleanup !== undefined, `${row.key}: cleanup`);
  }
});

Deno.test("child kinds: the waves in order, what runs pods last (cleanup takes them first)", () => {
  assert.deepEqual(childWaves().map((wave) => wave.map((row) => row.rt.kind)), [
    ["MiniClusterWorkspace", "ConfigMap", "Secret", "Service", "PodGroup"],
    ["Job", "Pod"],
  ]);
  const runsPods = CHILD_KINDS.filter((row) => row.cleanup?.runs).map((row) => row.wave);
  assert.deepEqual(runsPods, [1, 1]);
});
