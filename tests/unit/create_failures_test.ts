// The Job cannot create its pods (Pod Security Admission, a missing ServiceAccount, a quota): the
// Job controller's FailedCreate Event lands in the Ready condition, with its own reason and an
// Event. The Events are watched (field-selected), so reading them costs no request.
import assert from "node:assert/strict";
import type { Event } from "kubernetes-types/core/v1.d.ts";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import {
  createFailure,
  FAILED_CREATE_MAX_AGE_MS,
} from "../../controllers/minicluster/status/create_failures.ts";
import { TIMING } from "../../controllers/minicluster/timing.ts";
import { Events, Jobs } from "../../runtime/client/resources.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const PSA =
  'pods "flux-0-abcde" is forbidden: violates PodSecurity "baseline:latest": privileged (container "flux" must not set securityContext.privileged=true)';

function failedCreate(op: FakeOperator, job: Job, at: number, message = PSA): void {
  op.api.seed<Event>(Events, {
    metadata: { name: `flux.${at}.${job.metadata?.uid}`, namespace: NS },
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
  op.time += TIMING.firstStatusDelayMs;
  failedCreate(op, job, op.time - 500);
  op.sync();
  op.requestsSince();
  const action = await op.reconcile("flux");
  assert.ok(
    !op.requestsSince().some((r) => r.verb === "list"),
    "the watched Events are read from the cache, never listed",
  );
  const ready = op.condition("flux", "Ready");
  assert.equal(ready?.status, "False");
  assert.equal(ready?.reason, "FailedCreate");
  assert.match(ready!.message!, /^0\/2 pods ready; the Job cannot create pods: FailedCreate: /);
  assert.match(ready!.message!, /violates PodSecurity "baseline:latest": privileged/);
  assert.ok(op.events("flux").includes("FailedCreate"), "an Event on the MiniCluster");
  assert.deepEqual(
    action,
    { requeueAfter: FAILED_CREATE_MAX_AGE_MS - 500 + 1 },
    "looks again when the Event ages out",
  );

  // The pods come (the namespace's policy was relaxed): the reason goes.
  op.sync();
  op.seedPods("flux", 2, 2);
  op.time += 1_000;
  assert.deepEqual(await op.reconcile("flux"), {});
  assert.equal(op.condition("flux", "Ready")?.reason, "PodsReady");
});

Deno.test("create failures: old Events are history; other Jobs' Events are not ours", async () => {
  const { op, job } = await jobWithoutPods();
  op.time += TIMING.firstStatusDelayMs + FAILED_CREATE_MAX_AGE_MS;
  // An Event older than the maximum age says nothing about now.
  failedCreate(op, job, op.time - FAILED_CREATE_MAX_AGE_MS - 1_000);
  // A recent one about a namesake Job of another uid (deleted and re-created) is not about ours.
  failedCreate(op, { metadata: { uid: "another" } }, op.time - 100);
  op.sync();
  assert.deepEqual(await op.reconcile("flux"), {});
  assert.equal(op.condition("flux", "Ready")?.reason, "PodsNotReady");
  assert.equal(op.condition("flux", "Ready")?.message, "0/2 pods ready");
});

Deno.test("create failures: the Event cache keeps only FailedCreate Events on Jobs", async () => {
  const { op, job } = await jobWithoutPods();
  failedCreate(op, job, op.time);
  op.api.seed<Event>(Events, {
    metadata: { name: "other", namespace: NS },
    involvedObject: { kind: "Pod", namespace: NS, name: "p" },
    reason: "FailedCreate",
    message: "not about a Job",
  });
  op.sync();
  const cached = op.caches.jobEvents.list({ namespace: NS }) as Event[];
  assert.deepEqual(cached.map((e) => e.involvedObject.kind), ["Job"]);
});

Deno.test("create failures: pure: a finished, suspended or complete Job has no failure", () => {
  const job: Job = {
    metadata: { uid: "u", creationTimestamp: "2026-11-22T10:00:00Z" },
    spec: { parallelism: 1, template: {} },
  };
  const at = Date.parse("2026-11-22T10:05:00Z");
  const events: Event[] = [{
    metadata: { name: "e" },
    involvedObject: { kind: "Job", uid: "u" },
    reason: "FailedCreate",
    message: "quota",
    lastTimestamp: "2026-11-22T10:04:00Z",
  }];
  assert.equal(createFailure(job, [], events, at).message, "FailedCreate: quota");
  assert.deepEqual(
    createFailure({ ...job, spec: { ...job.spec!, suspend: true } }, [], events, at),
    {},
  );
  const done = { ...job, status: { conditions: [{ type: "Complete", status: "True" }] } };
  assert.deepEqual(createFailure(done, [], events, at), {});
  assert.deepEqual(createFailure(undefined, [], events, at), {});
});
