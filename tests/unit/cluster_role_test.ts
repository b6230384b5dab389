// The operator's ClusterRole is generated from the table of child kinds (hack/cluster-role.ts):
// the committed deploy/cluster-role.yaml is what the rows make, so a new row's rights reach
// install.yaml and the chart by running the generators, and a hand edit is caught here.
import assert from "node:assert/strict";
import { parse } from "yaml";
import { CHILD_KINDS } from "../../controllers/minicluster/kinds/child_kinds.ts";
import { clusterRoleRules } from "../../controllers/minicluster/kinds/rbac_rules.ts";
import { clusterRoleYaml } from "../../hack/cluster-role.ts";
import { denoFmt } from "../../hack/generated_file.ts";

const read = (path: string) => Deno.readTextFileSync(new URL(`../../${path}`, import.meta.url));

Deno.test("cluster role: deploy/cluster-role.yaml is what the rows make", async () => {
  assert.equal(
    read("deploy/cluster-role.yaml"),
    await denoFmt(clusterRoleYaml(clusterRoleRules()), "yaml"),
    "stale: run `deno run -A hack/cluster-role.ts`",
  );
});

Deno.test("cluster role: one rule per row, with the row's verbs and reason", () => {
  const rules = parse(clusterRoleYaml(clusterRoleRules())).rules as {
    apiGroups: string[];
    resources: string[];
    verbs: string[];
  }[];
  for (const row of CHILD_KINDS) {
    const rule = rules.filter((r) =>
      r.apiGroups.includes(row.rt.group) && r.resources.includes(row.rt.plural)
    );
    assert.deepEqual(rule.map((r) => r.verbs), [[...row.rbac]], row.key);
  }
});

Deno.test("cluster role: no exec, attach or port-forward into pods (the queue is read from the lead pod itself)", () => {
  const resources = clusterRoleRules().flatMap((r) => r.resources ?? []);
  for (const sub of ["pods/exec", "pods/attach", "pods/portforward", "pods/proxy"]) {
    assert.ok(!resources.includes(sub), sub);
  }
});
