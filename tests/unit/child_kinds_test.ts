// The table of child kinds (controllers/minicluster/kinds/child_kinds.ts) against what depends on it
// outside the code: the ClusterRole of deploy/ and of the chart grants exactly the verbs of each
// row, and each row's verbs cover what the row makes the operator do.
import assert from "node:assert/strict";
import { parse } from "yaml";
import { withDefaults } from "../../api/mod.ts";
import {
  CHILD_KINDS,
  childWaves,
  type DependentsInput,
  dependentsOf,
  type MiniClusterStores,
  type Verb,
} from "../../controllers/minicluster/kinds/child_kinds.ts";
import { generateCurveCertificate } from "../../controllers/minicluster/children/curve.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";
import { desiredChildren } from "../../controllers/minicluster/kinds/desired.ts";
import { Cache, type KubeObject } from "../../runtime/cache/store.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";

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

Deno.test("child kinds: the waves follow the rows, what runs pods last (cleanup takes it first)", () => {
  const written = CHILD_KINDS.filter((row) => row.wave !== undefined);
  // Every written row once, by wave, in the table's order within a wave.
  assert.deepEqual(
    childWaves().flat(),
    written.toSorted((a, b) => a.wave! - b.wave!),
  );
  const last = childWaves().length - 1;
  for (const row of written) {
    assert.equal(row.cleanup?.runs !== undefined, row.wave === last, `${row.key}: runs pods`);
  }
});

Deno.test("child kinds: a row's matcher is the one its dependents compare with", async () => {
  const spec = withDefaults(sampleMiniCluster("flux", "ns", {
    services: [{ name: "api", image: "nginx", ports: [80] }],
    gang: {},
    flux: { curveCert: (await generateCurveCertificate()).text },
  }));
  const mc = { ...spec, metadata: { ...spec.metadata, uid: "mc-uid" } };
  const desired = await desiredChildren(mc, specSizing(mc));
  const stores = new Proxy({}, {
    get: (made: Record<string, Cache<KubeObject>>, key: string) =>
      made[key] ??= new Cache<KubeObject>(key),
  }) as unknown as MiniClusterStores;
  // The workspace is created once (workspace.ts): no matcher to agree with.
  const workspace = { drift: "createOnce" };
  const input = { mc, desired, stores, workspace, io: {} } as unknown as DependentsInput;
  /** Observed objects a matcher may judge either way: as desired, or changed by someone else. */
  const variants = (d: KubeObject): KubeObject[] => {
    const changedSpec = structuredClone(d) as KubeObject & { spec?: Record<string, unknown> };
    const [field] = Object.keys(changedSpec.spec ?? {});
    changedSpec.spec = { ...changedSpec.spec, [field]: "changed by admission" };
    const changedLabel = structuredClone(d);
    changedLabel.metadata = { ...d.metadata, labels: { ...d.metadata?.labels, x: "y" } };
    const unhashed = structuredClone(d);
    unhashed.metadata = { ...d.metadata, annotations: {} };
    return [d, changedSpec, changedLabel, unhashed];
  };
  const compared = new Set<string>();
  for (const row of CHILD_KINDS) {
    for (const dep of dependentsOf(row, input)) {
      if (dep.drift === "createOnce") continue;
      const d = await dep.desired();
      for (const observed of variants(d)) {
        assert.equal(
          dep.drift.matches(observed, d),
          row.matches!(observed, d),
          `${row.key}: the row's matcher and its dependent's disagree`,
        );
        compared.add(row.key);
      }
    }
  }
  // Every row with a matcher had a dependent to compare (a ganged MiniCluster with a services pod
  // and the user's certificate).
  assert.deepEqual(
    [...compared],
    CHILD_KINDS.filter((row) => row.matches).map((row) => row.key),
  );
});
