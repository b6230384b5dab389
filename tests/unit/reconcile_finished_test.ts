// What a finished MiniCluster does next on the fake API server: a time to live far in the future is
// one requeue, not a loop; cleanup: true waits for the Job to finish.
import assert from "node:assert/strict";
import { systemClock } from "../../runtime/core/clock.ts";
import { Controller } from "../../runtime/controller/controller.ts";
import { Events, Jobs, Pods } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const DAY_MS = 24 * 3600 * 1000;

/** The Job of `name` finished (`type`: Complete or Failed) at the operator's current time. */
async function finishJob(op: FakeOperator, name: string, type = "Complete"): Promise<void> {
  const at = new Date(op.time).toISOString().replace(/\.\d{3}Z$/, "Z");
  const conditions = [{ type, status: "True", lastTransitionTime: at }];
  await op.api.patch(Jobs, NS, name, { status: { conditions } }, "merge", {
    subresource: "status",
  });
  op.sync();
}

Deno.test("reconcile finished: a 30-day TTL is one requeue far in the future, not a loop", async () => {
  const op = new FakeOperator();
  await op.create("month", { ttlSecondsAfterFinished: 30 * 24 * 3600 });
  await op.converge("month");
  await finishJob(op, "month");
  op.time += 3600_000;
  const action = await op.reconcile("month");
  assert.equal(action.requeueAfter, 30 * DAY_MS - 3600_000, "when the TTL ends");
  assert.ok(op.miniCluster("month"), "kept until then");

  // The controller on the real clock: the requeue's timer must hold, not fire at once.
  op.sync();
  let runs = 0;
  const reconciler = op.definition.reconciler;
  const controller = new Controller({
    ...op.definition,
    reconciler: {
      reconcile: (mc, ctx) => (runs++, reconciler.reconcile(mc, ctx)),
      deleted: (key) => reconciler.deleted(key),
    },
    clock: systemClock,
    resyncPeriodMs: 0,
  });
  await controller.start();
  await new Promise((r) => setTimeout(r, 300));
  await controller.stop();
  assert.equal(runs, 1, `${runs} reconciles in 300 ms`);
  assert.equal(controller.queue.delayed, 0, "stop cleared the timer");
});

Deno.test("reconcile finished: cleanup true waits for the Job, not for one failed lead-broker pod", async () => {
  const op = new FakeOperator();
  await op.create("oneshot", { cleanup: true, size: 2 });
  await op.converge("oneshot");
  op.seedPods("oneshot", 2, 2);
  // Evicted or preempted: the Job controller replaces the pod (backoffLimit), the cluster goes on.
  await op.api.patch(Pods, NS, "oneshot-0-x", { status: { phase: "Failed" } }, "merge", {
    subresource: "status",
  });
  op.sync();
  await op.reconcile("oneshot");
  assert.equal(op.miniCluster("oneshot")?.metadata?.deletionTimestamp, undefined, "kept");
  assert.ok(!op.events("oneshot").includes("CleanupAfterCompletion"));

  await finishJob(op, "oneshot", "Failed");
  await op.reconcile("oneshot");
  assert.ok(op.miniCluster("oneshot")?.metadata?.deletionTimestamp, "deleted once the Job failed");
  const event = op.api.objects<{ reason?: string; message?: string }>(Events)
    .find((e) => e.reason === "CleanupAfterCompletion");
  assert.match(event?.message ?? "", /the Job failed and spec\.cleanup is true/);
});

Deno.test("reconcile finished: cleanup true deletes the MiniCluster once its Job completed", async () => {
  const op = new FakeOperator();
  await op.create("done", { cleanup: true });
  await op.converge("done");
  await op.reconcile("done");
  assert.equal(op.miniCluster("done")?.metadata?.deletionTimestamp, undefined, "running: kept");
  await finishJob(op, "done", "Complete");
  await op.reconcile("done");
  assert.ok(op.miniCluster("done")?.metadata?.deletionTimestamp, "deleted (the finalizer runs)");
  const event = op.api.objects<{ reason?: string; message?: string }>(Events)
    .find((e) => e.reason === "CleanupAfterCompletion");
  assert.match(event?.message ?? "", /the Job completed and spec\.cleanup is true/);
});

Deno.test("reconcile finished: a stale view whose TTL ended does not delete a MiniCluster whose TTL was raised", async () => {
  const op = new FakeOperator();
  await op.create("raised", { ttlSecondsAfterFinished: 60 });
  await op.converge("raised");
  await finishJob(op, "raised");
  op.time += 120_000;
  // Just before, the user gave it an hour; the cache has not seen that yet.
  await op.api.patch(
    MiniClusters,
    NS,
    "raised",
    { spec: { ttlSecondsAfterFinished: 3600 } },
    "merge",
  );
  const action = await op.reconcile("raised");
  assert.equal(op.miniCluster("raised")?.metadata?.deletionTimestamp, undefined, "not deleted");
  assert.ok(!op.events("raised").includes("TTLExpired"), "no Event for what did not happen");
  assert.ok(action.requeueAfter && action.requeueAfter <= 1_000, "decides again soon");

  op.sync();
  assert.deepEqual(await op.reconcile("raised"), { requeueAfter: 3480_000 }, "from the live TTL");
  assert.equal(op.miniCluster("raised")?.metadata?.deletionTimestamp, undefined);
});

Deno.test("reconcile finished: a stale view with cleanup true does not delete a MiniCluster whose cleanup was cleared", async () => {
  const op = new FakeOperator();
  await op.create("kept", { cleanup: true });
  await op.converge("kept");
  await finishJob(op, "kept");
  // Just before, the user cleared cleanup; the cache has not seen that yet.
  await op.api.patch(MiniClusters, NS, "kept", { spec: { cleanup: false } }, "merge");
  await op.reconcile("kept");
  assert.equal(op.miniCluster("kept")?.metadata?.deletionTimestamp, undefined, "not deleted");
  assert.ok(!op.events("kept").includes("CleanupAfterCompletion"));
});
