// Kueue's defaults as the reconciler meets them (children/queue.ts, queue_workload.ts): Kueue
// labels and suspends every new Job of a namespace with a LocalQueue `default`, whatever the
// MiniCluster's labels; its Workloads may not be served; a Workload may carry a Job's uid label
// without being the Job's. How the user's spec.suspend is carried out follows the live Job and its
// Workload, not spec.jobLabels alone.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { MiniClusters } from "../../api/resource.ts";
import { KUEUE_QUEUE_LABEL } from "../../controllers/minicluster/children/queue.ts";
import {
  KUEUE_JOB_UID_LABEL,
  type KueueWorkload,
  KueueWorkloads,
} from "../../controllers/minicluster/lifecycle/queue_workload.ts";
import { Jobs, resourceName } from "../../runtime/client/resources.ts";
import { apiError } from "../../testing/fake_api.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const jobOf = (op: FakeOperator, name: string) => op.api.peek<Job>(Jobs, NS, name);

/** Kueue's webhook at the Job's creation in a namespace with a LocalQueue `default`. */
async function kueueDefaults(op: FakeOperator, name: string, queue = "default"): Promise<void> {
  await op.api.patch(Jobs, NS, name, {
    metadata: { labels: { [KUEUE_QUEUE_LABEL]: queue } },
  }, "merge");
  op.sync();
}

/** A Workload as Kueue makes it for `job` (controlled by the Job), or forged (`owned: false`). */
function seedWorkload(op: FakeOperator, job: Job, owned = true): KueueWorkload {
  const uid = job.metadata!.uid!;
  return op.api.seed<KueueWorkload>(KueueWorkloads, {
    apiVersion: "kueue.x-k8s.io/v1beta2",
    kind: "Workload",
    metadata: {
      name: `job-${job.metadata!.name}-${owned ? "real" : "forged"}`,
      namespace: NS,
      labels: { [KUEUE_JOB_UID_LABEL]: uid },
      ownerReferences: owned
        ? [{
          apiVersion: "batch/v1",
          kind: "Job",
          name: job.metadata!.name!,
          uid,
          controller: true,
        }]
        : [],
    },
    spec: { active: true, queueName: "default" },
  });
}

const workload = (op: FakeOperator, name: string) =>
  op.api.peek<KueueWorkload>(KueueWorkloads, NS, name);

async function patchSpec(op: FakeOperator, name: string, spec: Record<string, unknown>) {
  await op.api.patch(MiniClusters, NS, name, { spec }, "merge");
  op.sync();
}

Deno.test("reconcile queue defaults: a MiniCluster suspended from the start has no Job until resumed, labels or not", async () => {
  const op = new FakeOperator();
  await op.create("later", { suspend: true });
  await op.converge("later");
  assert.equal(jobOf(op, "later"), undefined, "no Job a default queue could admit");
  const suspended = op.condition("later", "Suspended");
  assert.equal(suspended?.status, "True");
  assert.match(suspended?.message ?? "", /the Job is created when it is false/);

  await patchSpec(op, "later", { suspend: false });
  await op.converge("later");
  assert.equal(jobOf(op, "later")?.spec?.suspend, undefined, "created running");
});

Deno.test("reconcile queue defaults: a Job Kueue labelled itself is suspended through its Workload, never on the Job", async () => {
  const op = new FakeOperator();
  await op.create("a");
  await op.converge("a");
  await kueueDefaults(op, "a");
  const wl = seedWorkload(op, jobOf(op, "a")!);
  op.sync();
  op.requestsSince();

  await patchSpec(op, "a", { suspend: true });
  await op.converge("a");
  assert.notEqual(jobOf(op, "a")?.spec?.suspend, true, "the operator never suspends Kueue's Job");
  assert.equal(
    workload(op, wl.metadata!.name!)?.spec?.active,
    false,
    "the Workload is deactivated",
  );
  assert.equal(jobOf(op, "a")?.metadata?.labels?.[KUEUE_QUEUE_LABEL], "default", "label kept");
  // One apply that states the label Kueue gave the Job (so that no later apply drops it).
  const jobWrites = op.requestsSince().filter((r) =>
    r.resource === "jobs.batch" && r.verb !== "get" && r.verb !== "list"
  );
  assert.deepEqual(jobWrites.map((r) => r.verb), ["apply"]);
  assert.equal(op.condition("a", "Suspended")?.reason, "Suspending");
  assert.match(op.condition("a", "Suspended")?.message ?? "", /deactivating Kueue's Workload/);
});

Deno.test("reconcile queue defaults: where Kueue's Workloads are not served, a labelled Job is suspended on the Job", async () => {
  const op = new FakeOperator();
  await op.create("a", { jobLabels: { [KUEUE_QUEUE_LABEL]: "lq" } });
  await op.converge("a");
  op.api.react((r) =>
    r.resource === resourceName(KueueWorkloads)
      ? apiError(404, "NotFound", "the server could not find the requested resource")
      : undefined
  );
  await patchSpec(op, "a", { suspend: true });
  await op.converge("a");
  assert.equal(jobOf(op, "a")?.spec?.suspend, true, "suspended by the operator itself");
  const suspended = op.condition("a", "Suspended");
  assert.deepEqual([suspended?.status, suspended?.reason], ["True", "Suspended"]);
  assert.match(suspended?.message ?? "", /does not serve Kueue's Workloads/);

  await patchSpec(op, "a", { suspend: false });
  await op.converge("a");
  assert.notEqual(jobOf(op, "a")?.spec?.suspend, true, "resumed");
});

Deno.test("reconcile queue defaults: a Workload the Job does not control is not the Job's", async () => {
  const op = new FakeOperator();
  await op.create("a", { jobLabels: { [KUEUE_QUEUE_LABEL]: "lq" } });
  await op.converge("a");
  const forged = seedWorkload(op, jobOf(op, "a")!, false);
  op.sync();
  await patchSpec(op, "a", { suspend: true });
  await op.converge("a");
  assert.equal(workload(op, forged.metadata!.name!)?.spec?.active, true, "the forgery is left");
  assert.equal(jobOf(op, "a")?.spec?.suspend, true, "the Job is suspended by the operator");
  assert.match(op.condition("a", "Suspended")?.message ?? "", /Kueue made no Workload for it/);
});

Deno.test("reconcile queue defaults: a Job's queue label is fixed once it exists; suspend still works", async () => {
  const op = new FakeOperator();
  // (a) added while suspended, (b) added to a running Job: reported, the Job left as created.
  await op.create("a");
  await op.converge("a");
  await patchSpec(op, "a", { suspend: true });
  await op.converge("a");
  await patchSpec(op, "a", { jobLabels: { [KUEUE_QUEUE_LABEL]: "lq" } });
  await op.converge("a");
  assert.equal(jobOf(op, "a")?.metadata?.labels?.[KUEUE_QUEUE_LABEL], undefined);
  const fixed = op.condition("a", "Unappliable");
  assert.deepEqual([fixed?.status, fixed?.reason], ["True", "QueueFixed"]);
  assert.match(fixed?.message ?? "", /was created with no queue/);
  await patchSpec(op, "a", { suspend: false });
  await op.converge("a");
  assert.notEqual(jobOf(op, "a")?.spec?.suspend, true, "resumes, not stranded");
  await patchSpec(op, "a", { suspend: true });
  await op.converge("a");
  assert.equal(jobOf(op, "a")?.spec?.suspend, true, "suspends, not stranded");

  // (c) removed: the Job keeps its queue (Kueue goes on admitting it), nothing is reported.
  await op.create("b", { jobLabels: { [KUEUE_QUEUE_LABEL]: "lq" } });
  await op.converge("b");
  await patchSpec(op, "b", { jobLabels: null });
  await op.converge("b");
  assert.equal(jobOf(op, "b")?.metadata?.labels?.[KUEUE_QUEUE_LABEL], "lq");
  assert.notEqual(op.condition("b", "Unappliable")?.status, "True");
});
