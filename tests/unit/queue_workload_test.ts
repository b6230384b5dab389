// A MiniCluster queued by Kueue: what its Workload makes of the Suspended condition, and when the
// operator writes the Workload's spec.active (queue_workload.ts, lifecycle.ts, children/queue.ts).
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { withDefaults } from "../../api/mod.ts";
import { buildJob } from "../../controllers/minicluster/children/job.ts";
import { FIELD_MANAGER } from "../../controllers/minicluster/children/names.ts";
import { kueueQueueOf } from "../../controllers/minicluster/children/queue.ts";
import { suspendedCondition } from "../../controllers/minicluster/lifecycle/lifecycle.ts";
import {
  activeToWrite,
  type KueueWorkload,
  queueReport,
} from "../../controllers/minicluster/lifecycle/queue_workload.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";

const QUEUE = { "kueue.x-k8s.io/queue-name": "lq" };

const workload = (
  active: boolean | undefined,
  conditions: { type: string; status: string; reason?: string; message?: string }[] = [],
  activeManagers: string[] = [],
): KueueWorkload => ({
  metadata: {
    name: "job-a-1",
    managedFields: activeManagers.map((manager) => ({
      manager,
      fieldsV1: { "f:spec": { "f:active": {} } },
    })),
  },
  spec: active === undefined ? {} : { active },
  status: {
    conditions: conditions.map((c) => ({
      reason: "",
      message: "",
      lastTransitionTime: "2026-01-01T00:00:00Z",
      ...c,
    })),
  },
});

const job = (suspend: boolean): Job => ({
  metadata: { name: "a", labels: QUEUE },
  spec: { suspend, template: {} },
});

Deno.test("queue: a Job labelled for a Kueue queue never carries spec.suspend", () => {
  const mc = (spec: Parameters<typeof sampleMiniCluster>[2]) =>
    withDefaults({
      ...sampleMiniCluster("a", "ns", spec),
      metadata: { name: "a", namespace: "ns", uid: "u1" },
    });
  const queued = mc({ suspend: true, jobLabels: QUEUE });
  assert.equal(kueueQueueOf(queued), "lq");
  assert.equal(buildJob(queued, specSizing(queued)).spec?.suspend, undefined);
  const plain = mc({ suspend: true });
  assert.equal(kueueQueueOf(plain), undefined);
  assert.equal(buildJob(plain, specSizing(plain)).spec?.suspend, true);
});

Deno.test("queue: spec.suspend deactivates the Workload; only the operator's deactivation is undone", () => {
  assert.equal(activeToWrite(workload(undefined), true), false);
  assert.equal(activeToWrite(workload(true), true), false);
  assert.equal(activeToWrite(workload(false, [], [FIELD_MANAGER]), true), undefined);
  assert.equal(activeToWrite(workload(true), false), undefined);
  assert.equal(activeToWrite(workload(false, [], [FIELD_MANAGER]), false), true);
  // Kueue (or an admin) deactivated it: not the operator's to undo.
  assert.equal(activeToWrite(workload(false, [], ["kueue"]), false), undefined);
  assert.equal(activeToWrite(workload(false, [], [FIELD_MANAGER, "admin"]), false), undefined);
  assert.equal(activeToWrite(workload(false), false), undefined);
});

Deno.test("queue: a preempted MiniCluster reports Kueue's reason and message", () => {
  const preempted = queueReport(
    "lq",
    workload(true, [
      { type: "Evicted", status: "True", reason: "Preempted", message: "Preempted to accommodate" },
      { type: "QuotaReserved", status: "False", reason: "Pending", message: "insufficient quota" },
    ]),
  );
  const [held, reason, message] = suspendedCondition(job(true), false, preempted);
  assert.deepEqual([held, reason], [true, "Preempted"]);
  assert.match(message, /evicted by Kueue \(Preempted\): Preempted to accommodate.*queue lq/);
});

Deno.test("queue: a waiting MiniCluster names its queue and why Kueue has not admitted it", () => {
  const pending = queueReport(
    "lq",
    workload(true, [
      { type: "QuotaReserved", status: "False", reason: "Pending", message: "insufficient quota" },
    ]),
  );
  const [held, reason, message] = suspendedCondition(job(true), false, pending);
  assert.deepEqual([held, reason], [true, "WaitingForAdmission"]);
  assert.match(message, /suspended by queue lq.*\(Kueue: insufficient quota\)/);
  // Reactivated by the operator: the deactivation's eviction is over, it waits like any other.
  const reactivated = queueReport(
    "lq",
    workload(true, [{ type: "Evicted", status: "True", reason: "Deactivated", message: "x" }]),
  );
  assert.equal(suspendedCondition(job(true), false, reactivated)[1], "WaitingForAdmission");
});

Deno.test("queue: spec.suspend of a queued MiniCluster, before and after Kueue stops the Job", () => {
  const active = queueReport("lq", workload(true));
  const inactive = queueReport("lq", workload(false, [], [FIELD_MANAGER]));
  assert.deepEqual(suspendedCondition(undefined, true, { queue: "lq" }).slice(0, 2), [
    true,
    "Suspended",
  ]);
  assert.match(suspendedCondition(undefined, true, { queue: "lq" })[2], /created when it is false/);
  assert.deepEqual(suspendedCondition(job(false), true, active).slice(0, 2), [false, "Suspending"]);
  assert.deepEqual(suspendedCondition(job(false), true, inactive).slice(0, 2), [
    false,
    "Suspending",
  ]);
  const [held, reason, message] = suspendedCondition(job(true), true, inactive);
  assert.deepEqual([held, reason], [true, "Suspended"]);
  assert.match(message, /Workload job-a-1 is deactivated/);
});
