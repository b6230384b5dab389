// The workspace as a kind of its own (MiniClusterWorkspace) on the fake API server: a user's
// ConfigMap named like the MiniCluster no longer stands in its way, an older version's ConfigMap
// workspace is migrated, and a deleted workspace is made again from what runs, never from the spec.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { parse } from "yaml";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import { MiniClusters } from "../../api/resource.ts";
import { owned } from "../../controllers/minicluster/kinds/owned_children.ts";
import {
  WORKSPACE_ROLE,
  WORKSPACE_ROLE_LABEL,
} from "../../controllers/minicluster/workspace/legacy_workspace.ts";
import { maxSizeFromEntrypoint } from "../../controllers/minicluster/workspace/workspace_recovery.ts";
import { ConfigMaps, Jobs } from "../../runtime/client/resources.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const workspaceOf = (op: FakeOperator, name: string) =>
  op.api.peek<MiniClusterWorkspace>(MiniClusterWorkspaces, NS, name);
const jobOf = (op: FakeOperator, name: string) => op.api.peek<Job>(Jobs, NS, name);
const hostlist = (op: FakeOperator, name: string) =>
  /^hosts=(.*)$/m.exec(
    op.api.peek<ConfigMap>(ConfigMaps, NS, `${name}-entrypoint`)!.data!["flux-view"],
  )?.[1];

async function converged(name: string, spec = {}): Promise<FakeOperator> {
  const op = new FakeOperator();
  await op.create(name, spec);
  await op.converge(name);
  op.requestsSince();
  return op;
}

async function edit(op: FakeOperator, name: string, spec: Record<string, unknown>) {
  await op.api.patch(MiniClusters, NS, name, { spec }, "merge");
  op.sync();
}

Deno.test("workspace: a user's ConfigMap named like the MiniCluster does not block it and is left alone", async () => {
  const op = new FakeOperator();
  const mine = { metadata: { name: "flux", namespace: NS }, data: { "my-key": "my value" } };
  await op.api.create(ConfigMaps, mine);
  await op.create("flux", { size: 2 });
  await op.converge("flux");
  assert.equal(jobOf(op, "flux")?.spec?.parallelism, 2, "the Job exists");
  assert.deepEqual(workspaceOf(op, "flux")?.spec, { maxSize: 2, size: 2, fluxView: "Copy" });
  assert.equal(op.condition("flux", "Unappliable")?.status ?? "False", "False");
  const cm = op.api.peek<ConfigMap>(ConfigMaps, NS, "flux")!;
  assert.deepEqual(cm.data, mine.data, "the user's ConfigMap untouched");
  assert.equal(cm.metadata?.ownerReferences, undefined);
});

Deno.test("workspace: an older version's ConfigMap workspace is migrated, then deleted by uid", async () => {
  const op = new FakeOperator();
  const mc = await op.create("old", { size: 2, maxSize: 2 });
  // What an older version left: the workspace ConfigMap (maxSize 5) and the children built for it.
  await op.api.create(
    ConfigMaps,
    owned(mc, {
      metadata: { name: "old", labels: { [WORKSPACE_ROLE_LABEL]: WORKSPACE_ROLE } },
      data: { "bootstrap-max-size": "5", "bootstrap-size": "2" },
    }),
  );
  op.sync();
  await op.converge("old");
  assert.deepEqual(workspaceOf(op, "old")?.spec, { maxSize: 5, size: 2 }, "its values kept");
  assert.equal(op.api.peek(ConfigMaps, NS, "old"), undefined, "the old ConfigMap gone");
  assert.equal(hostlist(op, "old"), "'old-[0-4]'", "the hostlist is still for maxSize 5");
  assert.equal(op.miniCluster("old")?.status?.maximumSize, 5);
});

Deno.test("workspace: a deleted workspace is made again from the running hostlist, not the spec (size limit kept)", async () => {
  const op = await converged("flux", { size: 2, maxSize: 2 });
  assert.equal(hostlist(op, "flux"), "'flux-[0-1]'");
  await op.api.delete(MiniClusterWorkspaces, NS, "flux");
  await edit(op, "flux", { size: 4, maxSize: 4 });
  await op.converge("flux");
  const recovered = { maxSize: 2, size: 2, fluxView: "Copy" };
  assert.deepEqual(workspaceOf(op, "flux")?.spec, recovered, "recovered");
  assert.equal(jobOf(op, "flux")?.spec?.parallelism, 2, "still at most the brokers' maxSize");
  assert.equal(hostlist(op, "flux"), "'flux-[0-1]'", "the running brokers' hostlist kept");
  assert.equal(op.miniCluster("flux")?.status?.maximumSize, 2);
  assert.ok(op.events("flux").includes("WorkspaceRecovered"));
});

Deno.test("workspace: a deleted workspace that cannot be recovered is WorkspaceLost and nothing is written", async () => {
  // A custom hostlist does not say which maxSize the brokers were started with.
  const bursting = { flux: { bursting: { hostlist: "here-[0-1],there-[0-3]" } } };
  const op = await converged("flux", { size: 2, maxSize: 2, ...bursting });
  const jobBefore = jobOf(op, "flux");
  await op.api.delete(MiniClusterWorkspaces, NS, "flux");
  await edit(op, "flux", { size: 4, maxSize: 4 });
  op.writesSince();
  await op.reconcile("flux");
  assert.deepEqual(
    op.writesSince().filter((w) => !w.startsWith("apply miniclusters") && !w.includes("events")),
    [],
    "no child written",
  );
  assert.equal(workspaceOf(op, "flux"), undefined);
  assert.deepEqual(jobOf(op, "flux"), jobBefore);
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.reason, "WorkspaceLost");
  assert.match(c!.message!, /delete and re-create the MiniCluster/);
  assert.ok(op.events("flux").includes("WorkspaceLost"));
});

Deno.test("workspace: with no Job yet, a missing workspace may follow the spec", async () => {
  const op = await converged("flux", { size: 2, maxSize: 2 });
  await op.api.delete(MiniClusterWorkspaces, NS, "flux");
  await op.api.delete(Jobs, NS, "flux");
  await op.api.delete(ConfigMaps, NS, "flux-entrypoint");
  await edit(op, "flux", { size: 3, maxSize: 3 });
  await op.converge("flux");
  assert.deepEqual(workspaceOf(op, "flux")?.spec, { maxSize: 3, size: 3, fluxView: "Copy" });
  assert.equal(jobOf(op, "flux")?.spec?.parallelism, 3);
});

Deno.test("maxSizeFromEntrypoint: the own brokers' range first in the flux-view hostlist, else nothing", () => {
  const script = (hosts: string) =>
    `x\nhosts=${hosts}\nprintf '%s\\n' "\${hosts}" > "\${installRoot}/etc/flux/system/hostlist"\n`;
  const cm = (hosts: string): ConfigMap => ({
    data: { "flux-view": script(hosts), "wait-0": `hosts=$(cat "\${configroot}/hostlist")\n` },
  });
  assert.equal(maxSizeFromEntrypoint(cm("'flux-[0-7]'"), "flux"), 8);
  assert.equal(maxSizeFromEntrypoint(cm("'flux-[0]'"), "flux"), 1);
  assert.equal(maxSizeFromEntrypoint(cm("'flux-[0-1],burst-0-[0-3]'"), "flux"), 2);
  assert.equal(maxSizeFromEntrypoint(cm("'lead.example,lead-[1-3]'"), "flux"), undefined);
  assert.equal(maxSizeFromEntrypoint(cm("'other-[0-3]'"), "flux"), undefined);
  assert.equal(maxSizeFromEntrypoint(cm("'flux-[1-3]'"), "flux"), undefined);
  assert.equal(
    maxSizeFromEntrypoint({ data: { "wait-0": "hosts='flux-[0-3]'" } }, "flux"),
    undefined,
  );
});

Deno.test("MiniClusterWorkspace CRD: spec.maxSize and spec.size required integers ≥ 1, written once", async () => {
  const crd = parse(
    await Deno.readTextFile(new URL("../../crds/miniclusterworkspace.yaml", import.meta.url)),
  );
  const version = crd.spec.versions[0];
  assert.equal(`${crd.spec.group}/${version.name}`, MiniClusterWorkspaces.group + "/v1alpha2");
  assert.equal(crd.spec.names.plural, MiniClusterWorkspaces.plural);
  assert.equal(crd.spec.names.kind, MiniClusterWorkspaces.kind);
  const spec = version.schema.openAPIV3Schema.properties.spec;
  assert.deepEqual(spec.required, ["maxSize", "size"]);
  for (const field of ["maxSize", "size"]) {
    assert.equal(spec.properties[field].type, "integer");
    assert.equal(spec.properties[field].minimum, 1);
  }
  assert.equal(spec["x-kubernetes-validations"][0].rule, "self == oldSelf");
  assert.equal(version.subresources, undefined, "no status");
});
