import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { computeStatus, progressOnly } from "../../controllers/minicluster/status/status.ts";
import { StatusWriter } from "../../controllers/minicluster/status/status_writer.ts";
import { EventRecorder } from "../../controllers/minicluster/status/events.ts";
import type { MiniClusterStores } from "../../controllers/minicluster/kinds/child_kinds.ts";
import { TIMING } from "../../controllers/minicluster/timing.ts";
import { FakeOperator } from "../../testing/fake_operator.ts";
import { FreshnessFence } from "../../runtime/controller/freshness_fence.ts";

const job: Job = { metadata: { uid: "j" }, spec: { parallelism: 4, template: {} } };

function pods(ready: number): Pod[] {
  return Array.from({ length: 4 }, (_, i) => ({
    metadata: {
      name: `p${i}`,
      ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "x", uid: "j" }],
    },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: i < ready ? "True" : "False" }],
    },
  }));
}

function status(ready: number, previous?: ReturnType<typeof computeStatus>) {
  return computeStatus({
    generation: 1,
    selector: "hpa-selector=x",
    requestedSize: 4,
    effectiveSize: 4,
    maximumSize: 4,
    job,
    pods: pods(ready),
    previous: previous?.conditions,
    now: "2026-01-01T00:00:00Z",
  });
}

Deno.test("progressOnly: another ready pod is progress; Ready turning True is not", () => {
  const zero = status(0);
  assert.equal(progressOnly(zero, status(1, zero)), true);
  assert.equal(progressOnly(status(3), status(4, status(3))), false, "Ready turns True");
  assert.equal(progressOnly(undefined, zero), false, "no stored status yet");
  assert.equal(progressOnly({}, zero), false);
  const otherGeneration = { ...status(1, zero), observedGeneration: 2 };
  assert.equal(progressOnly(zero, otherGeneration), false);
});

Deno.test("status plan: pacing is data: the first status waits, progress waits, no request made", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 4 });
  await op.reconcile("flux");
  op.sync();
  const writer = new StatusWriter(
    op.api,
    op.caches as unknown as MiniClusterStores,
    new EventRecorder(op.api, { instance: "unit-test" }),
    () => new Date(op.time),
  );
  const mc = op.miniCluster("flux")!;
  const report = { requestedSize: 4, effectiveSize: 4, maximumSize: 4 };
  op.requestsSince();
  assert.deepEqual(writer.plan(mc, { ...report, jobCreated: true }), {
    paced: "firstStatus",
    action: { requeueAfter: TIMING.firstStatusDelayMs },
  });
  op.seedPods("flux", 4, 0);
  const first = writer.plan(mc, report);
  assert.equal(first.paced, undefined, "a first status is due at once");
  assert.equal(first.status?.conditions?.find((c) => c.type === "Ready")?.reason, "PodsNotReady");
  assert.deepEqual(op.requestsSince(), [], "planning makes no request");

  await writer.write(mc, first.status!, FreshnessFence.live());
  op.sync();
  op.seedPods("flux", 4, 1);
  op.time += 1_000;
  const progress = writer.plan(op.miniCluster("flux")!, report);
  assert.equal(progress.status, undefined, "one more ready pod waits");
  assert.equal(progress.paced, "progress");
  assert.deepEqual(progress.action, { requeueAfter: TIMING.statusProgressIntervalMs - 1_000 });
});
