// Every way a MiniCluster reconcile ends (controllers/minicluster/reconciler.ts, its stages, and
// the finalizer around them, runtime/controller/finalizer.ts) has a test on the fake operator. Each stage
// returns Continue or Stop (stage.ts); every Stop ends in finish. This file holds the exits no other
// file tests; the others are tested where their subject lives:
//
//   finalizer  added on first sight, then the stages           reconcile_create_test.ts
//              being deleted, ours: cleanup waits, finishes,   reconcile_lifecycle_test.ts
//              times out
//              deleted before its finalizer could be added     here
//              being deleted, someone else's finalizer only    here
//              gone from the cache: forgotten                  reconcile_lifecycle_test.ts
//   validate   invalid spec (ValidationFailed)                 reconcile_lifecycle_test.ts
//              a spec validation cannot read (ValidationFailed) here
//   sizes      the workspace refuses the sizes                 reconcile_lifecycle_test.ts,
//              (WorkspaceInvalid/Lost)                         workspace_test.ts
//   build      CURVE certificate refused, or its Secret        reconcile_curve_ref_test.ts
//              missing
//              the builders refuse the spec (BuildFailed)      here
//              ... and a missing workspace is not made again   here
//              no gang served: built again unganged            reconcile_gang_test.ts
//   police     the pods break --pod-security                   pod_security_test.ts
//   gang       the PodGroup's name taken before the Job exists reconcile_gang_test.ts
//              the PodGroup's name taken beside a running Job  here (continues: reported)
//   dependents a write fails: reported from the first retry,   reconcile_failing_write_test.ts,
//              rethrown                                        reconcile_quota_test.ts
//              ... and its report fails too: the write's error here
//              thrown
//              the workspace refuses the unconfirmed sizes     reconcile_lifecycle_test.ts
//              the workspace holds other sizes: build again    reconcile_lifecycle_test.ts
//   (any)      a transient error: rethrown for the backoff     reconcile_drift_test.ts
//              a view older than the live MiniCluster: wait,   reconcile_drift_test.ts
//              requeue
//   finish     a stale view: not even the status is written    here
//              finished: deletes itself, or not from a stale   reconcile_finished_test.ts
//              view
//              finished, but already deleted by someone else   here
//              status written, or paced (first status, then    reconcile_create_test.ts,
//              progress), requeue at the soonest deadline      reconcile_lifecycle_test.ts,
//                                                              reconcile_finished_test.ts
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import type { PodGroup } from "../../controllers/minicluster/children/gang.ts";
import { PodGroups } from "../../controllers/minicluster/gang/pod_group.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { ConfigMaps, Jobs, Pods, Secrets, Services } from "../../runtime/client/resources.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const APPARMOR = "container.apparmor.security.beta.kubernetes.io/";

/** Every child kind the operator makes, by name: what a refused spec must not have produced. */
function children(op: FakeOperator): string[] {
  return [ConfigMaps, Secrets, Services, Jobs, Pods, MiniClusterWorkspaces, PodGroups].flatMap(
    (rt) => op.api.objects<{ metadata?: { name?: string } }>(rt).map((o) => o.metadata?.name ?? ""),
  );
}

Deno.test("reconcile exits: a spec the builders refuse is BuildFailed, builds nothing, and recovers once fixed", async () => {
  const op = new FakeOperator();
  // Valid for the CRD and for validation; only building the pods shows that no container is "apii".
  await op.create("typo", {
    services: [{ name: "api", image: "nginx" }],
    pod: { annotations: { [`${APPARMOR}apii`]: "runtime/default" } },
  });
  const action = await op.reconcile("typo");
  assert.deepEqual(action, {}, "no retry: a spec problem waits for a change of the spec");
  const c = op.condition("typo", "SpecInvalid");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "BuildFailed");
  assert.equal(
    c?.message,
    `spec.pod.annotations: "${APPARMOR}apii" names container "apii", which no pod of the MiniCluster has (the Job's pods: flux-view, typo; the services pod: api)`,
  );
  assert.equal(op.condition("typo", "Ready")?.reason, "SpecInvalid");
  assert.ok(op.events("typo").includes("BuildFailed"), `events: ${op.events("typo")}`);
  assert.deepEqual(children(op), [], "not a child, not even the workspace");

  // The annotation names the services pod's container: built, and the condition clears.
  await op.api.patch(MiniClusters, NS, "typo", {
    spec: { pod: { annotations: { [`${APPARMOR}apii`]: null, [`${APPARMOR}api`]: "" } } },
  }, "merge");
  op.sync();
  await op.converge("typo");
  assert.ok(op.api.peek<Job>(Jobs, NS, "typo"), "the Job is made");
  assert.equal(op.condition("typo", "SpecInvalid")?.status, "False");
});

Deno.test("reconcile exits: a spec validation cannot read is ValidationFailed, not an error retried forever", async () => {
  const op = new FakeOperator();
  // The CRD's schema refuses it; an apiserver without the schema (or a fake one) lets it through.
  await op.create("garbled", {
    containers: "hostname" as unknown as MiniCluster["spec"]["containers"],
  });
  assert.deepEqual(await op.reconcile("garbled"), {});
  const c = op.condition("garbled", "SpecInvalid");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "ValidationFailed");
  assert.ok(c?.message, "says what could not be read");
  assert.ok(op.events("garbled").includes("ValidationFailed"));
  assert.deepEqual(children(op), []);
});

Deno.test("reconcile exits: a MiniCluster being deleted with only someone else's finalizer is left alone", async () => {
  const op = new FakeOperator();
  // Deleted before the operator ever saw it: it never got the operator's finalizer.
  await op.api.create(MiniClusters, {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "theirs", namespace: NS, finalizers: ["example.com/keep"] },
    spec: { containers: [{ image: "app", command: "hostname" }], size: 2 },
  });
  await op.api.delete(MiniClusters, NS, "theirs");
  op.sync();
  op.requestsSince();
  assert.deepEqual(await op.reconcile("theirs"), {});
  assert.deepEqual(op.writesSince(), [], "no finalizer added, no status, no child");
  assert.deepEqual(op.miniCluster("theirs")?.metadata?.finalizers, ["example.com/keep"]);
});

Deno.test("reconcile exits: a MiniCluster deleted before its finalizer could be added: nothing made", async () => {
  const op = new FakeOperator();
  await op.create("brief");
  // Gone from the API server (no finalizer held it) while the cache still shows it.
  await op.api.delete(MiniClusters, NS, "brief");
  op.requestsSince();
  assert.deepEqual(await op.reconcile("brief"), {});
  assert.deepEqual(
    op.writesSince().filter((w) => !w.startsWith("patch miniclusters")),
    [],
    "only the finalizer's patch, which found it gone",
  );
  assert.deepEqual(children(op), []);
});

Deno.test("reconcile exits: a PodGroup name taken beside a running Job is reported; the rest still applies", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2, maxSize: 4, gang: {} });
  await op.converge("flux");
  assert.ok(op.api.peek<Job>(Jobs, NS, "flux"), "running, ganged");
  // Its PodGroup is deleted and someone else's takes the name.
  await op.api.delete(PodGroups, NS, "flux");
  await op.api.create<PodGroup>(PodGroups, {
    metadata: { name: "flux", namespace: NS },
    spec: { schedulingPolicy: { gang: { minCount: 1 } } },
  });
  await op.api.patch(MiniClusters, NS, "flux", { spec: { size: 3 } }, "merge");
  op.sync();
  await op.reconcile("flux");
  op.sync();
  op.time += 1_000;
  await op.reconcile("flux");
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "NameTaken");
  assert.match(c!.message!, /PodGroup flux exists and is not owned by this MiniCluster/);
  assert.equal(op.api.peek<Job>(Jobs, NS, "flux")?.spec?.parallelism, 3, "the size still applies");
  const group = op.api.peek<PodGroup>(PodGroups, NS, "flux");
  assert.equal(group?.spec?.schedulingPolicy?.gang?.minCount, 1, "someone else's, left alone");
});

Deno.test("reconcile exits: a finished MiniCluster someone else deleted first is not deleted again or announced", async () => {
  const op = new FakeOperator();
  await op.create("done", { cleanup: true });
  await op.converge("done");
  const at = new Date(op.time).toISOString().replace(/\.\d{3}Z$/, "Z");
  await op.api.patch(
    Jobs,
    NS,
    "done",
    {
      status: { conditions: [{ type: "Complete", status: "True", lastTransitionTime: at }] },
    },
    "merge",
    { subresource: "status" },
  );
  op.caches.jobs.replace(op.api.objects(Jobs), { synced: true });
  // Gone from the API server (its finalizer removed by hand) while the cache still shows it.
  await op.api.patch(MiniClusters, NS, "done", { metadata: { finalizers: null } }, "merge");
  await op.api.delete(MiniClusters, NS, "done");
  assert.equal(op.miniCluster("done"), undefined);
  op.requestsSince();
  await op.reconcile("done");
  assert.deepEqual(
    op.writesSince().filter((w) => !w.startsWith("delete miniclusters")),
    [],
    "nothing written about a MiniCluster that is gone",
  );
  assert.ok(!op.events("done").includes("CleanupAfterCompletion"), `events: ${op.events("done")}`);
});

Deno.test("reconcile exits: a failing write whose report fails too throws the write's error, for the backoff", async () => {
  const op = new FakeOperator();
  await op.create("big");
  op.api.react((r) => {
    if (r.resource === "jobs.batch" && r.verb === "apply") {
      return new ApiError({ code: 500, message: "etcdserver: request is too large" });
    }
    if (r.resource === "miniclusters.flux-framework.org/status") {
      return new ApiError({ code: 503, message: "the status cannot be written now" });
    }
  });
  await assert.rejects(op.reconcile("big"), /request is too large/);
  op.sync();
  op.requestsSince();
  await assert.rejects(op.reconcile("big", 1), /request is too large/, "not the report's error");
  assert.ok(
    op.requestsSince().some((r) => r.resource === "miniclusters.flux-framework.org/status"),
    "the report was tried",
  );
  assert.equal(op.condition("big", "Unappliable"), undefined, "the report could not be written");
});

Deno.test("reconcile exits: a stale view of an invalid spec writes no status and no Event", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2 });
  await op.converge("flux");
  // The user fixed a spec the cache still shows broken (a lagging watch): generation 1 garbled.
  const before = op.miniCluster("flux")!;
  await op.api.patch(MiniClusters, NS, "flux", { spec: { size: 3 } }, "merge");
  const garbled = "hostname" as unknown as MiniCluster["spec"]["containers"];
  const stale: MiniCluster = { ...before, spec: { ...before.spec, containers: garbled } };
  op.caches.miniClusters.apply("MODIFIED", stale);
  op.requestsSince();
  assert.deepEqual(await op.reconcile("flux"), { requeueAfter: 1_000 }, "waits for the cache");
  // The status write carried the view's resourceVersion: the server refused it, and the fence's
  // read then found a newer generation.
  assert.deepEqual(op.requestsSince().map((r) => `${r.verb} ${r.resource}`), [
    "apply miniclusters.flux-framework.org/status",
    "get miniclusters.flux-framework.org",
  ]);
  assert.notEqual(op.condition("flux", "SpecInvalid")?.status, "True");
  assert.ok(!op.events("flux").includes("ValidationFailed"));
});

Deno.test("reconcile exits: a status write from a view behind a status change reads the fence once", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2 });
  await op.converge("flux");
  // The view lags behind a status write of someone else (same generation) and shows no conditions:
  // the precondition fails, the fence's read finds the view's generation, and the status is
  // written without it.
  const view = op.miniCluster("flux")!;
  await op.api.apply(MiniClusters, {
    apiVersion: view.apiVersion,
    kind: view.kind,
    metadata: { name: "flux", namespace: NS },
    status: { conditions: [] },
  } as unknown as MiniCluster, { fieldManager: "someone", subresource: "status" });
  const lagging: MiniCluster = { ...view, status: { ...view.status, conditions: [] } };
  op.caches.miniClusters.apply("MODIFIED", lagging);
  op.requestsSince();
  await op.reconcile("flux");
  assert.deepEqual(op.requestsSince().map((r) => `${r.verb} ${r.resource}`), [
    "apply miniclusters.flux-framework.org/status",
    "get miniclusters.flux-framework.org",
    "apply miniclusters.flux-framework.org/status",
  ]);
  assert.equal(op.condition("flux", "Ready")?.type, "Ready", "the status was written");
});

Deno.test("reconcile exits: a spec the builders refuse does not re-create a missing workspace", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2, services: [{ name: "api", image: "nginx" }] });
  await op.converge("flux");
  await op.api.delete(MiniClusterWorkspaces, NS, "flux");
  await op.api.patch(MiniClusters, NS, "flux", {
    spec: { pod: { annotations: { [`${APPARMOR}apii`]: "runtime/default" } } },
  }, "merge");
  op.sync();
  op.requestsSince();
  assert.deepEqual(await op.reconcile("flux"), {});
  assert.equal(op.condition("flux", "SpecInvalid")?.reason, "BuildFailed");
  assert.deepEqual(
    op.writesSince().filter((w) => !w.startsWith("apply miniclusters") && !w.includes("events")),
    [],
    "sizes only read: nothing is written before the children are known to build",
  );
  assert.equal(op.api.peek(MiniClusterWorkspaces, NS, "flux"), undefined);
});
