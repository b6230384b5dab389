// spec.gang on the fake API server: the PodGroup written before the Job whose pods name it, its
// minCount following the size, a name someone else holds looked at again, the PodGroup deleted
// with its MiniCluster, a gang no scheduler enforced said so, turning the gang on or off reported
// as an immutable field, and an API server that refuses the pods' schedulingGroup: the
// MiniCluster runs unganged, says why once, and asks again only when the answer is old.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { NAME_TAKEN_RECHECK_MS } from "../../runtime/controller/dependents.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { jobPodGroup, type PodGroup } from "../../controllers/minicluster/children/gang.ts";
import { GANG_SUPPORT_TTL_MS } from "../../controllers/minicluster/gang/gang_support.ts";
import { PodGroups } from "../../controllers/minicluster/gang/pod_group.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const job = (op: FakeOperator, name: string) => op.api.peek<Job>(Jobs, NS, name);
const minCount = (op: FakeOperator, name: string) =>
  op.api.peek<PodGroup>(PodGroups, NS, name)?.spec?.schedulingPolicy?.gang?.minCount;

async function edit(op: FakeOperator, name: string, spec: Record<string, unknown>) {
  await op.api.patch(MiniClusters, NS, name, { spec }, "merge");
  op.sync();
  op.requestsSince();
}

/** What Kubernetes before 1.36 answers a Job whose pods name a PodGroup, under Strict validation. */
const unknownField = new ApiError({
  code: 400,
  reason: "BadRequest",
  message: 'Job in version "v1" cannot be handled as a Job: strict decoding error: ' +
    'unknown field "spec.template.spec.schedulingGroup"',
});

Deno.test("reconcile gang: the PodGroup before the Job, its minCount following the size", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 4, maxSize: 6, gang: {} });
  await op.reconcile("flux");
  const writes = op.writesSince().filter((w) => /podgroups|jobs/.test(w));
  // The dry run that asks whether the API server keeps the gang, the PodGroup, then the Job.
  assert.deepEqual(writes, [
    "create jobs.batch flux-1",
    "apply podgroups.scheduling.k8s.io flux",
    "apply jobs.batch flux",
  ]);
  await op.converge("flux");
  assert.equal(jobPodGroup(job(op, "flux")), "flux");
  assert.equal(minCount(op, "flux"), 4);
  assert.equal(op.condition("flux", "Unappliable")?.status, "False");
  assert.equal(op.condition("flux", "GangScheduling")?.reason, "Pending");
  // An unchanged MiniCluster writes nothing (the PodGroup is read, not applied).
  op.requestsSince();
  await op.reconcile("flux");
  assert.deepEqual(op.writesSince(), []);

  await edit(op, "flux", { size: 2 });
  await op.converge("flux");
  assert.equal(job(op, "flux")?.spec?.parallelism, 2);
  assert.equal(minCount(op, "flux"), 2, "never above the Job's pods");
  await edit(op, "flux", { size: 5, gang: { minCount: 3 } });
  await op.converge("flux");
  assert.equal(job(op, "flux")?.spec?.parallelism, 5);
  assert.equal(minCount(op, "flux"), 3);
  assert.equal(op.condition("flux", "Unappliable")?.status, "False");
});

Deno.test("reconcile gang: pods that run while the scheduler left the PodGroup unanswered: NotEnforced, once", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2, gang: {}, pod: { schedulerName: "my-scheduler" } });
  await op.converge("flux");
  assert.equal(op.condition("flux", "GangScheduling")?.reason, "Pending");
  op.seedPods("flux", 2, 2);
  await op.converge("flux");
  const c = op.condition("flux", "GangScheduling");
  assert.equal(c?.status, "False");
  assert.equal(c?.reason, "NotEnforced");
  assert.match(c!.message!, /2 of 2 pods run, placed by the scheduler my-scheduler/);
  assert.equal(op.condition("flux", "Ready")?.status, "True", "beside Ready, not instead of it");
  assert.deepEqual(op.events("flux").filter((r) => r === "NotEnforced"), ["NotEnforced"]);
});

Deno.test("reconcile gang: turning the gang off or on for a running Job is reported, not applied", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2, gang: {} });
  await op.converge("flux");
  await edit(op, "flux", { gang: null });
  await op.converge("flux");
  const off = op.condition("flux", "Unappliable");
  assert.equal(off?.reason, "JobFieldsImmutable");
  assert.match(off!.message!, /spec\.template\.spec\.schedulingGroup/);
  assert.equal(jobPodGroup(job(op, "flux")), "flux", "the Job keeps its gang");
  assert.equal(op.condition("flux", "GangScheduling")?.reason, "Pending", "still reported");

  const plain = new FakeOperator();
  await plain.create("flux", { size: 2 });
  await plain.converge("flux");
  await edit(plain, "flux", { gang: {} });
  await plain.converge("flux");
  assert.equal(plain.condition("flux", "Unappliable")?.reason, "JobFieldsImmutable");
  const gang = plain.condition("flux", "GangScheduling");
  assert.equal(gang?.reason, "JobNotGanged");
  assert.match(gang!.message!, /applies when the MiniCluster is created again/);
  assert.equal(jobPodGroup(job(plain, "flux")), undefined);
  assert.equal(minCount(plain, "flux"), undefined, "no PodGroup no pod would name");
});

Deno.test("reconcile gang: an API server that refuses the pods' schedulingGroup: unganged, said once, asked again later", async () => {
  const op = new FakeOperator();
  op.api.react((r) =>
    r.verb === "create" && r.resource === "jobs.batch" ? unknownField : undefined
  );
  await op.create("flux", { size: 2, gang: {} });
  await op.converge("flux");
  assert.ok(job(op, "flux"), "the Job runs");
  assert.equal(jobPodGroup(job(op, "flux")), undefined, "without a gang");
  assert.equal(minCount(op, "flux"), undefined, "and no PodGroup");
  const c = op.condition("flux", "GangScheduling");
  assert.equal(c?.status, "False");
  assert.equal(c?.reason, "Unavailable");
  assert.match(c!.message!, /refused the pods' schedulingGroup: 400 BadRequest: .*unknown field/);
  assert.match(c!.message!, /scheduled one by one/);
  assert.equal(op.condition("flux", "Unappliable")?.status, "False");
  assert.deepEqual(op.events("flux").filter((r) => r === "Unavailable"), ["Unavailable"]);

  // Within the answer's lifetime no other dry run; a reconcile after it asks again.
  const probes = () =>
    op.requestsSince().filter((r) => r.verb === "create" && r.resource === "jobs.batch").length;
  await edit(op, "flux", { size: 1 });
  await op.converge("flux");
  assert.equal(probes(), 0);
  op.time += GANG_SUPPORT_TTL_MS;
  await edit(op, "flux", { size: 2 });
  await op.converge("flux");
  assert.equal(probes(), 1);
  assert.deepEqual(op.events("flux").filter((r) => r === "Unavailable"), ["Unavailable"]);
});

Deno.test("reconcile gang: a PodGroup of the name held by someone else: no Job, NameTaken, looked at again", async () => {
  const op = new FakeOperator();
  // Unlabelled: the cache cannot see it; only the create-only apply's Conflict tells.
  const stranger = await op.api.create<PodGroup>(PodGroups, {
    metadata: { name: "flux", namespace: NS },
    spec: { schedulingPolicy: { gang: { minCount: 1 } } },
  });
  await op.create("flux", { size: 2, gang: {} });
  const action = await op.reconcile("flux");
  op.sync();
  assert.equal(job(op, "flux"), undefined, "pods naming someone else's PodGroup are not made");
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.reason, "NameTaken");
  assert.match(c!.message!, /PodGroup flux exists and is not owned by this MiniCluster/);
  assert.equal(minCount(op, "flux"), 1, "left as it is");
  // Looked at again like every other child: someone else's PodGroup may go without an event.
  assert.ok(action.requeueAfter! <= NAME_TAKEN_RECHECK_MS, JSON.stringify(action));

  await op.api.delete(PodGroups, NS, "flux", { preconditions: { uid: stranger.metadata?.uid } });
  op.time += action.requeueAfter!;
  await op.converge("flux");
  assert.equal(minCount(op, "flux"), 2, "its own PodGroup now");
  assert.equal(jobPodGroup(job(op, "flux")), "flux", "and its ganged Job");
  assert.equal(op.condition("flux", "Unappliable")?.reason, "Applied");
});

Deno.test("reconcile gang: a ganged MiniCluster deleted and created again: cleanup deletes its PodGroup, the successor gets its own and its Job", async () => {
  const op = new FakeOperator();
  const old = await op.create("again", { size: 2, gang: {} });
  await op.converge("again");
  assert.equal(minCount(op, "again"), 2);
  await op.api.delete(MiniClusters, NS, "again");
  op.sync();
  await op.reconcile("again");
  assert.equal(op.miniCluster("again"), undefined, "the finalizer was removed");
  assert.equal(minCount(op, "again"), undefined, "cleanup deleted the PodGroup");
  assert.ok(op.events("again").includes("CleanedUp"));

  const fresh = await op.create("again", { size: 3, gang: {} });
  assert.notEqual(fresh.metadata?.uid, old.metadata?.uid);
  await op.converge("again");
  const group = op.api.peek<PodGroup>(PodGroups, NS, "again");
  assert.equal(group?.metadata?.ownerReferences?.[0]?.uid, fresh.metadata?.uid);
  assert.equal(job(op, "again")?.metadata?.ownerReferences?.[0]?.uid, fresh.metadata?.uid);
  assert.equal(op.condition("again", "Unappliable")?.reason, "Applied");
});

Deno.test("reconcile gang: the dry run stores nothing and a MiniCluster without a gang makes none", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2, gang: {} });
  await op.create("plain", { size: 2 });
  await op.converge("flux");
  await op.converge("plain");
  assert.deepEqual(op.api.objects<Job>(Jobs).map((j) => j.metadata?.name).sort(), [
    "flux",
    "plain",
  ]);
  assert.deepEqual(op.api.objects<PodGroup>(PodGroups).map((g) => g.metadata?.name), ["flux"]);
  assert.equal(op.condition("plain", "GangScheduling"), undefined, "no condition without a gang");
});
