// Reconcile paths of a running MiniCluster on the fake API server: drift undone, names of others
// refused, stale views that write nothing, a Job that cannot change, a Service that must be
// re-created, children pruned, and refused writes that become conditions.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Pod, Service } from "kubernetes-types/core/v1.d.ts";
import { NAME_TAKEN_RECHECK_MS, RECREATE_REQUEUE_MS } from "../../runtime/controller/dependents.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { ConfigMaps, Jobs, Pods, Services } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

async function converged(name: string, spec = {}): Promise<FakeOperator> {
  const op = new FakeOperator();
  await op.create(name, spec);
  await op.converge(name);
  op.requestsSince();
  return op;
}

/** Changes the spec as a user would (the generation moves) and syncs the caches. */
async function edit(op: FakeOperator, name: string, spec: Record<string, unknown>) {
  await op.api.patch(MiniClusters, NS, name, { spec }, "merge");
  op.sync();
  op.requestsSince();
}

Deno.test("reconcile drift: a hand edit of a child is undone, after one read of the live MiniCluster", async () => {
  const op = await converged("flux");
  const wanted = op.api.peek<ConfigMap>(ConfigMaps, NS, "flux-entrypoint")!.data!["wait-0"];
  await op.api.patch(
    ConfigMaps,
    NS,
    "flux-entrypoint",
    { data: { "wait-0": "tampered" } },
    "merge",
  );
  op.sync();
  op.requestsSince();
  await op.reconcile("flux");
  assert.deepEqual(
    op.requestsSince().map((r) => `${r.verb} ${r.resource} ${r.name}`),
    ["get miniclusters.flux-framework.org flux", "apply configmaps flux-entrypoint"],
  );
  assert.equal(op.api.peek<ConfigMap>(ConfigMaps, NS, "flux-entrypoint")!.data!["wait-0"], wanted);
});

Deno.test("reconcile drift: a stale view of the MiniCluster writes nothing and waits for the cache", async () => {
  const op = await converged("flux", { size: 2, maxSize: 4 });
  // The user scales to 3, but the cache still shows generation 1 (a lagging watch).
  await op.api.patch(MiniClusters, NS, "flux", { spec: { size: 3 } }, "merge");
  op.showStale("flux", 1, 1);
  op.requestsSince();
  const action = await op.reconcile("flux");
  assert.deepEqual(op.writesSince(), [], "nothing written from generation 1");
  assert.deepEqual(action, { requeueAfter: 1_000 });
  assert.equal(op.api.peek<Job>(Jobs, NS, "flux")?.spec?.parallelism, 2);
  op.sync();
  await op.reconcile("flux");
  assert.equal(op.api.peek<Job>(Jobs, NS, "flux")?.spec?.parallelism, 3, "then the live spec");
});

Deno.test("reconcile drift: a name held by someone else is never taken over", async () => {
  const op = new FakeOperator();
  // Unlabelled: the cache cannot see it; only the create-only apply's Conflict tells.
  const stranger = await op.api.create<Service>(Services, {
    metadata: { name: "flux", namespace: NS },
    spec: { ports: [{ port: 80 }] },
  });
  await op.create("flux");
  const action = await op.reconcile("flux");
  op.sync();
  op.time += 1_000;
  await op.reconcile("flux");
  const taken = op.condition("flux", "Unappliable");
  assert.equal(taken?.reason, "NameTaken");
  assert.match(taken!.message!, /Service flux exists and is not owned by this MiniCluster/);
  const now = op.api.peek<Service>(Services, NS, "flux")!;
  assert.equal(now.metadata?.uid, stranger.metadata?.uid);
  assert.equal(now.metadata?.resourceVersion, stranger.metadata?.resourceVersion, "untouched");
  assert.ok(op.api.peek(Jobs, NS, "flux"), "the other children are still written");
  // Looked at again (it may go unseen); sooner when the new Job's pods are checked on first.
  assert.ok(action.requeueAfter! <= NAME_TAKEN_RECHECK_MS, "looked at again: it may go unseen");
  assert.ok(op.events("flux").includes("NameTaken"));
});

Deno.test("reconcile drift: a running Job takes size and labels; template changes are reported", async () => {
  const op = await converged("flux", { size: 2, maxSize: 4 });
  await edit(op, "flux", {
    size: 3,
    jobLabels: { team: "hpc" },
    containers: [{ image: "other:1", command: "hostname" }],
  });
  await op.reconcile("flux");
  assert.deepEqual(op.writesSince().filter((w) => w.includes("jobs")), ["patch jobs.batch flux"]);
  const job = op.api.peek<Job>(Jobs, NS, "flux")!;
  assert.equal(job.spec?.parallelism, 3);
  assert.equal(job.metadata?.labels?.team, "hpc");
  assert.notEqual(job.spec?.template.spec?.containers[0].image, "other:1", "template unchanged");
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.reason, "JobFieldsImmutable");
  assert.match(c!.message!, /spec\.template\.spec\.containers\[name=[^\]]+\]\.image/);
  assert.deepEqual(op.events("flux").filter((e) => e !== "PodsNotReady").sort(), [
    "JobFieldsImmutable",
    "Scaled",
  ]);
});

Deno.test("reconcile drift: a podFailurePolicy a running Job lacks is reported", async () => {
  // Made with OnFailure (as every Job of earlier versions): no podFailurePolicy.
  const op = await converged("flux", { size: 2, pod: { restartPolicy: "OnFailure" } });
  assert.equal(op.api.peek<Job>(Jobs, NS, "flux")?.spec?.podFailurePolicy, undefined);
  await edit(op, "flux", { pod: { restartPolicy: null } });
  await op.reconcile("flux");
  const job = op.api.peek<Job>(Jobs, NS, "flux")!;
  assert.equal(job.spec?.template.spec?.restartPolicy, "OnFailure", "template unchanged");
  assert.equal(job.spec?.podFailurePolicy, undefined, "podFailurePolicy unchanged");
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.reason, "JobFieldsImmutable");
  assert.match(c!.message!, /spec\.podFailurePolicy/);
  assert.match(c!.message!, /spec\.template\.spec\.restartPolicy/);
});

Deno.test("reconcile drift: a size change alone is applied to the Job", async () => {
  const op = await converged("flux", { size: 2, maxSize: 4 });
  await edit(op, "flux", { size: 4 });
  await op.reconcile("flux");
  assert.ok(op.writesSince().includes("apply jobs.batch flux"));
  assert.equal(op.api.peek<Job>(Jobs, NS, "flux")?.spec?.parallelism, 4);
  assert.equal(op.condition("flux", "Unappliable")?.reason, "Applied");
});

Deno.test("reconcile drift: headless ⇄ ClusterIP re-creates the Service", async () => {
  const op = await converged("flux");
  const headless = op.api.peek<Service>(Services, NS, "flux")!;
  assert.equal(headless.spec?.clusterIP, "None");
  await edit(op, "flux", { flux: { minimalService: true } });
  const action = await op.reconcile("flux");
  assert.equal(action.requeueAfter, RECREATE_REQUEUE_MS);
  assert.equal(op.api.peek(Services, NS, "flux"), undefined, "deleted");
  op.sync();
  await op.reconcile("flux");
  const clusterIp = op.api.peek<Service>(Services, NS, "flux")!;
  assert.notEqual(clusterIp.spec?.clusterIP, "None");
  assert.notEqual(clusterIp.metadata?.uid, headless.metadata?.uid);

  // And back: an apply would be refused (clusterIP is immutable); it is re-created as well.
  op.sync();
  await edit(op, "flux", { flux: { minimalService: false } });
  await op.reconcile("flux");
  op.sync();
  await op.reconcile("flux");
  assert.equal(op.api.peek<Service>(Services, NS, "flux")?.spec?.clusterIP, "None");
});

Deno.test("reconcile drift: a changed services pod is re-created", async () => {
  const services = [{ name: "api", image: "nginx:1", ports: [80] }];
  const op = await converged("flux", { services });
  const before = op.api.peek<Pod>(Pods, NS, "flux-services")!;
  await edit(op, "flux", { services: [{ ...services[0], image: "nginx:2" }] });
  const action = await op.reconcile("flux");
  assert.ok(op.writesSince().includes("delete pods flux-services"));
  assert.equal(action.requeueAfter, RECREATE_REQUEUE_MS);
  op.sync();
  await op.reconcile("flux");
  const after = op.api.peek<Pod>(Pods, NS, "flux-services")!;
  assert.notEqual(after.metadata?.uid, before.metadata?.uid);
  assert.equal(after.spec?.containers.find((c) => c.name === "api")?.image, "nginx:2");
});

Deno.test("reconcile drift: a child the spec no longer asks for is pruned, guarded by its uid", async () => {
  const containers = [
    { image: "app", command: "hostname", runFlux: true },
    { name: "db", image: "postgres", ports: [5432] },
  ];
  const op = await converged("flux", { containers });
  assert.ok(op.api.peek(Services, NS, "flux-db"));
  const deletes: unknown[] = [];
  const original = op.api.delete.bind(op.api);
  op.api.delete = (rt, ns, name, opts) => {
    deletes.push(opts?.preconditions);
    return original(rt, ns, name, opts);
  };
  await edit(op, "flux", { containers: [containers[0]] });
  await op.reconcile("flux");
  assert.ok(op.writesSince().includes("delete services flux-db"));
  assert.equal(op.api.peek(Services, NS, "flux-db"), undefined);
  assert.ok(deletes.every((p) => (p as { uid?: string })?.uid), "every delete names the uid");
  assert.ok(op.api.peek(MiniClusterWorkspaces, NS, "flux"), "the workspace is never pruned");
});

Deno.test("reconcile drift: a refused write is a condition, the other children still go; a transient error is retried", async () => {
  const op = new FakeOperator();
  await op.create("flux");
  const forbidden = new ApiError({
    code: 403,
    reason: "Forbidden",
    message: 'services "flux" is forbidden: denied by policy',
  });
  const stop = op.api.react((r) =>
    r.resource === "services" && r.verb === "apply" ? forbidden : undefined
  );
  await op.reconcile("flux");
  op.sync();
  op.time += 1_000;
  await op.reconcile("flux");
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.reason, "ApiError");
  assert.match(c!.message!, /Service flux: 403 Forbidden: .*denied by policy/);
  assert.ok(op.api.peek(Jobs, NS, "flux"));
  stop();

  op.api.react((r) =>
    r.verb === "apply" && r.resource === "configmaps"
      ? new ApiError({ code: 500, reason: "InternalError", message: "etcd timeout" })
      : undefined
  );
  await op.api.patch(ConfigMaps, NS, "flux-entrypoint", { data: { "wait-0": "x" } }, "merge");
  op.sync();
  await assert.rejects(
    () => op.reconcile("flux"),
    /500 InternalError/,
    "thrown: retried with backoff",
  );
});
