// The real Kueue (v0.17.0) with the defaults its users run, on KWOK nodes: a namespace with a
// LocalQueue named `default`, where Kueue labels and queues every new Job whatever the MiniCluster
// says (LocalQueueDefaulting), and queue labels added to or removed from existing MiniClusters.
// What must hold: no pod while the user suspends, the Job's spec changed once per user action
// (nobody writes it back and forth), no MiniCluster stranded by a label change, and a Workload that
// is not the Job's never taken for it.
import assert from "node:assert/strict";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { KUEUE_QUEUE_LABEL } from "../../controllers/minicluster/children/queue.ts";
import {
  KUEUE_JOB_UID_LABEL,
  KueueWorkloads,
} from "../../controllers/minicluster/lifecycle/queue_workload.ts";
import type { TestEnv } from "../harness.ts";
import {
  conditionOf,
  eventsOf,
  eventually,
  getMiniCluster,
  heldStill,
  jobOf,
  KEEP_RUNNING,
  miniCluster,
  podsOf,
  waitForCondition,
  waitForRunningPods,
} from "./env.ts";
import {
  jobWrites,
  kueueTest,
  LOCAL_QUEUE,
  staysWithoutPods,
  workloadCondition,
  workloadsOf,
} from "./kueue_env.ts";

/** A MiniCluster of 2 pods of one CPU each, with `spec` merged in (no queue label of its own). */
function twoPods(
  env: { namespace: string },
  name: string,
  spec: Partial<MiniCluster["spec"]> = {},
) {
  const mc = miniCluster(name, env.namespace, {
    size: 2,
    pod: { annotations: KEEP_RUNNING },
    ...spec,
  });
  mc.spec!.containers = mc.spec!.containers.map((c) => ({
    ...c,
    resources: { requests: { cpu: 1, memory: "64Mi" } },
  }));
  return mc;
}

async function patchSpec(env: TestEnv, name: string, spec: Record<string, unknown>) {
  await env.client.patch(MiniClusters, env.namespace, name, { spec }, "merge");
}

/** The Job's spec generation (it moves on every change of the Job's spec). */
const generation = async (env: TestEnv, name: string) =>
  (await jobOf(env, name)).metadata?.generation ?? 0;

kueueTest(
  "e2e kueue defaults: with a LocalQueue `default`, an unlabelled MiniCluster suspended at creation and later has no pod while suspended, its Job changed once per action",
  { cpu: 2, localQueue: "default" },
  async (env, op) => {
    await env.client.create(MiniClusters, twoPods(env, "a", { suspend: true }));
    await waitForCondition(env, "a", "Suspended", { status: "True", reason: "Suspended" });
    await staysWithoutPods(env, "a", 20_000);
    await assert.rejects(jobOf(env, "a"), /not ?found/i, "no Job a default queue would admit");

    await patchSpec(env, "a", { suspend: false });
    await waitForRunningPods(env, "a", 2, 60_000);
    const job = await jobOf(env, "a");
    assert.equal(job.metadata?.labels?.[KUEUE_QUEUE_LABEL], "default", "Kueue queued it");
    const [admitted] = await workloadsOf(env, job.metadata!.uid!);
    assert.ok(workloadCondition(admitted, "Admitted"), "admitted by Kueue");

    await waitForCondition(env, "a", "Suspended", { status: "False", reason: "NotSuspended" });
    // Its Event goes out after the status write: counted before the baseline, not after.
    await eventually(async () => {
      const reasons = (await eventsOf(env, "a")).map((e) => e.reason);
      assert.ok(reasons.includes("NotSuspended"), reasons.join(", "));
    });

    // Suspended later: through the Workload, and for 60 s nothing moves.
    const generationBefore = await generation(env, "a");
    const writesBefore = await jobWrites(op);
    const eventsBefore = (await eventsOf(env, "a")).length;
    await patchSpec(env, "a", { suspend: true });
    await eventually(async () => {
      const suspended = conditionOf(await getMiniCluster(env, "a"), "Suspended");
      assert.equal(suspended?.status, "True");
      assert.match(suspended?.message ?? "", /Workload .* is deactivated/);
    }, { timeoutMs: 30_000 });
    await eventually(async () => assert.deepEqual((await podsOf(env, "a")).length, 0));
    // Kueue's second update (the template restored) is not ordered with the pods going: the
    // stop is over once the generation holds still for 3 s.
    const generationStopped = await heldStill(() => generation(env, "a"), "the Job's generation", {
      timeoutMs: 30_000,
    });
    await staysWithoutPods(env, "a", 60_000);
    const suspended = await jobOf(env, "a");
    assert.equal(suspended.spec?.suspend, true);
    const stop = generationStopped - generationBefore;
    const during = (suspended.metadata?.generation ?? 0) - generationStopped;
    const writes = (await jobWrites(op)) - writesBefore;
    const events = (await eventsOf(env, "a")).slice(eventsBefore).map((e) =>
      `${e.reason} ${e.message?.split(":")[0]}`
    );
    console.log(
      `suspended later: Kueue's stop changed the Job's spec ${stop} time(s); then over 60 s ` +
        `${during} change(s), ${writes} operator write(s) to the Job; Events: ${events.join(", ")}`,
    );
    // Kueue stops a Job in two updates (suspend, then restore the template it changed at
    // admission); the operator writes the Job no more, and nothing moves afterwards.
    assert.ok(stop <= 2, `Kueue's stop changed the Job's spec ${stop} times`);
    assert.equal(during, 0, "the Job's spec does not move while suspended");
    assert.equal(writes, 0, "the operator never writes a Job Kueue tracks to suspend it");
    assert.deepEqual(events.filter((e) => /Suspended$/.test(e) || /^NotSuspended/.test(e)), [
      "Suspended Suspended",
    ], "Suspended turns True once and stays");

    await patchSpec(env, "a", { suspend: false });
    await waitForRunningPods(env, "a", 2, 60_000);
  },
  240_000,
);

kueueTest(
  "e2e kueue defaults: a queue label added or removed after the Job exists is reported, and the MiniCluster still scales, suspends and resumes",
  { cpu: 4 },
  async (env) => {
    const label = { [KUEUE_QUEUE_LABEL]: LOCAL_QUEUE };
    // (a) added while suspended.
    await env.client.create(MiniClusters, twoPods(env, "a"));
    await waitForRunningPods(env, "a", 2, 60_000);
    await patchSpec(env, "a", { suspend: true });
    await eventually(async () => assert.equal((await podsOf(env, "a")).length, 0));
    await patchSpec(env, "a", { jobLabels: label });
    const fixed = await waitForCondition(env, "a", "Unappliable", {
      status: "True",
      reason: "QueueFixed",
    });
    assert.match(conditionOf(fixed, "Unappliable")?.message ?? "", /created with no queue/);
    await patchSpec(env, "a", { suspend: false });
    await waitForRunningPods(env, "a", 2, 60_000);
    assert.equal((await jobOf(env, "a")).metadata?.labels?.[KUEUE_QUEUE_LABEL], undefined);

    // (b) added to a running Job: later updates still go through.
    await env.client.create(MiniClusters, twoPods(env, "b", { maxSize: 3 }));
    await waitForRunningPods(env, "b", 2, 60_000);
    await patchSpec(env, "b", { jobLabels: label });
    await waitForCondition(env, "b", "Unappliable", { status: "True", reason: "QueueFixed" });
    await patchSpec(env, "b", { size: 1 });
    await eventually(async () => assert.equal((await jobOf(env, "b")).spec?.parallelism, 1));
    await patchSpec(env, "b", { suspend: true });
    await eventually(async () => assert.equal((await podsOf(env, "b")).length, 0));
    await patchSpec(env, "b", { suspend: false });
    await waitForRunningPods(env, "b", 1, 60_000);

    // (c) removed while Kueue holds the Job: it keeps its queue, and runs when admitted.
    await patchSpec(env, "a", { suspend: true });
    await patchSpec(env, "b", { suspend: true });
    await env.client.create(MiniClusters, twoPods(env, "c", { jobLabels: label, suspend: false }));
    await waitForRunningPods(env, "c", 2, 60_000);
    await patchSpec(env, "c", { suspend: true });
    await waitForCondition(env, "c", "Suspended", { status: "True", reason: "Suspended" });
    await patchSpec(env, "c", { jobLabels: null });
    await patchSpec(env, "c", { suspend: false });
    await waitForRunningPods(env, "c", 2, 60_000);
    const job = await jobOf(env, "c");
    assert.equal(job.metadata?.labels?.[KUEUE_QUEUE_LABEL], LOCAL_QUEUE, "the Job keeps its queue");
    const [wl] = await workloadsOf(env, job.metadata!.uid!);
    assert.ok(workloadCondition(wl, "Admitted"), "c runs admitted by Kueue");
  },
  300_000,
);

kueueTest(
  "e2e kueue defaults: a Workload carrying a Job's uid label but not controlled by the Job is left alone",
  { cpu: 4 },
  async (env) => {
    await env.client.create(
      MiniClusters,
      twoPods(env, "a", { jobLabels: { [KUEUE_QUEUE_LABEL]: LOCAL_QUEUE } }),
    );
    await waitForRunningPods(env, "a", 2, 60_000);
    const job = await jobOf(env, "a");
    const uid = job.metadata!.uid!;
    // Anyone who may create Workloads can copy the label; this one is newer than Kueue's.
    await env.client.create(KueueWorkloads, {
      apiVersion: "kueue.x-k8s.io/v1beta2",
      kind: "Workload",
      metadata: {
        name: "forged",
        namespace: env.namespace,
        labels: { [KUEUE_JOB_UID_LABEL]: uid },
      },
      spec: {
        queueName: LOCAL_QUEUE,
        podSets: [{
          name: "main",
          count: 1,
          template: { spec: { containers: [{ name: "c", image: "busybox" }] } },
        }],
      },
    });
    await patchSpec(env, "a", { suspend: true });
    await eventually(async () => assert.equal((await podsOf(env, "a")).length, 0));
    const workloads = await workloadsOf(env, uid);
    const forged = workloads.find((w) => w.metadata?.name === "forged");
    const real = workloads.find((w) => w.metadata?.name !== "forged");
    assert.notEqual(
      forged?.spec?.active,
      false,
      "the forged Workload is not the operator's to touch",
    );
    assert.equal(real?.spec?.active, false, "the Job's own Workload is deactivated");
  },
  120_000,
);
