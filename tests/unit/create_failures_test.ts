// The Job cannot create its pods (Pod Security Admission, a missing ServiceAccount, a quota): the
// Job controller's FailedCreate Event lands in the Ready condition, with its own reason and an
// Event, and the reconcile keeps looking (nothing watched changes while pods are refused), at a
// bounded API cost.
import assert from "node:assert/strict";
import type { Event } from "kubernetes-types/core/v1.d.ts";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { CREATE_FAILURE_TIMING } from "../../controllers/minicluster/create_failures.ts";
import { TIMING } from "../../controllers/minicluster/timing.ts";
import { Events, Jobs } from "../../runtime/resources.ts";
import { FakeOperator, NS } from "./fake_operator.ts";

const PSA =
  'pods "flux-0-abcde" is forbidden: violates PodSecurity "baseline:latest": privileged (container "flux" must not set securityContext.privileged=true)';

function failedCreate(op: FakeOperator, job: Job, at: number, message = PSA): void {
  op.api.seed<Event>(Events, {
    metadata: { name: `flux.${at}`, namespace: NS },
    involvedObject: { kind: "Job", namespace: NS, name: "flux", uid: job.metadata?.uid },
    reason: "FailedCreate",
    type: "Warning",
    message: `Error creating: ${message}`,
    lastTimestamp: new Date(at).toISOString(),
  });
}

async function jobWithoutPods(): Promise<{ op: FakeOperator; job: Job }> {
  const op = new FakeOperator();
  await op.create("flux", { size: 2 });
  await op.reconcile("flux");
  op.sync();
  return { op, job: op.api.peek<Job>(Jobs, NS, "flux")! };
}

Deno.test("create failures: the Job's FailedCreate becomes the Ready reason and message", async () => {
  const { op, job } = await jobWithoutPods();
  op.time += TIMING.firstStatusDelayMs + CREATE_FAILURE_TIMING.graceMs;
  failedCreate(op, job, op.time - 500);
  op.requestsSince();
  const action = await op.reconcile("flux");
  const lists = op.requestsSince().filter((r) => r.verb === "list");
  assert.deepEqual(lists.map((r) => r.resource), ["events"], "one list of Events");
  const ready = op.condition("flux", "Ready");
  assert.equal(ready?.status, "False");
  assert.equal(ready?.reason, "FailedCreate");
  assert.match(ready!.message!, /^0\/2 pods ready; the Job cannot create pods: FailedCreate: /);
  assert.match(ready!.message!, /violates PodSecurity "baseline:latest": privileged/);
  assert.ok(op.events("flux").includes("FailedCreate"), "an Event on the MiniCluster");
  assert.deepEqual(action, { requeueAfter: CREATE_FAILURE_TIMING.intervalMs }, "looks again");

  // Within the interval: the remembered answer, no request.
  op.sync();
  op.time += 1_000;
  await op.reconcile("flux");
  assert.deepEqual(op.requestsSince(), [], "no request within the interval");

  // The pods come (the namespace's policy was relaxed): no more lists, the reason goes.
  op.seedPods("flux", 2, 2);
  op.time += CREATE_FAILURE_TIMING.intervalMs;
  assert.deepEqual(await op.reconcile("flux"), {});
  assert.equal(op.condition("flux", "Ready")?.reason, "PodsReady");
  assert.ok(!op.requestsSince().some((r) => r.verb === "list"), "a Job with its pods: no list");
});

Deno.test("create failures: old Events are history; a young Job is not asked about", async () => {
  const { op, job } = await jobWithoutPods();
  op.requestsSince();
  // Young: the pods are still being made.
  op.time += TIMING.firstStatusDelayMs;
  const early = await op.reconcile("flux");
  assert.ok(!op.requestsSince().some((r) => r.verb === "list"), "no list before the grace");
  assert.ok(early.requeueAfter! <= CREATE_FAILURE_TIMING.graceMs);
  op.sync();
  // An Event older than maxAgeMs says nothing about now.
  op.time += CREATE_FAILURE_TIMING.graceMs + CREATE_FAILURE_TIMING.maxAgeMs;
  failedCreate(op, job, op.time - CREATE_FAILURE_TIMING.maxAgeMs - 1_000);
  await op.reconcile("flux");
  assert.equal(op.condition("flux", "Ready")?.reason, "PodsNotReady");
  assert.equal(op.condition("flux", "Ready")?.message, "0/2 pods ready");
});
