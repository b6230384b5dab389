// The Job's lifecycle with the real Job controller and scheduler on KWOK nodes: a suspended
// MiniCluster has no pods until it is resumed; the Job succeeds when the lead broker does, with
// followers still running; scaling down and a crashed follower are not failures.
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { Pods } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { kubectl } from "../harness.ts";
import {
  conditionOf,
  e2eTest,
  eventually,
  getMiniCluster,
  jobOf,
  KEEP_RUNNING,
  miniCluster,
  podsOf,
  waitForCondition,
  waitForRunningPods,
} from "./env.ts";

const INDEX_LABEL = "batch.kubernetes.io/job-completion-index";
const byIndex = (pods: Pod[], index: string) =>
  pods.find((p) => p.metadata?.labels?.[INDEX_LABEL] === index && !p.metadata.deletionTimestamp)!;

e2eTest(
  "e2e queueing: a MiniCluster suspended from the start gets its Job and pods only after resume",
  async (env) => {
    await env.startOperator();
    await env.client.create(
      MiniClusters,
      miniCluster("later", env.namespace, {
        size: 3,
        suspend: true,
        pod: { annotations: KEEP_RUNNING },
      }),
    );
    await waitForCondition(env, "later", "Suspended", { status: "True", reason: "Suspended" });
    await waitForCondition(env, "later", "Ready", { status: "False", reason: "Suspended" });
    // The Job controller had time to act on the Job: still no pod.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.deepEqual((await podsOf(env, "later")).map((p) => p.metadata?.name), []);
    // Suspended from the start: no Job until resumed (a default queue would admit one at once).
    await assert.rejects(jobOf(env, "later"), /not ?found/i);

    await env.client.patch(
      MiniClusters,
      env.namespace,
      "later",
      { spec: { suspend: false } },
      "merge",
    );
    await waitForRunningPods(env, "later", 3);
    await waitForCondition(env, "later", "Ready", { status: "True", reason: "PodsReady" });
    await waitForCondition(env, "later", "Suspended", { status: "False", reason: "NotSuspended" });
  },
  { timeoutMs: 120_000 },
);

e2eTest("e2e queueing: the Job succeeds with the lead broker, followers running", async (env) => {
  await env.startOperator();
  await env.client.create(
    MiniClusters,
    miniCluster("lead", env.namespace, { size: 3, pod: { annotations: KEEP_RUNNING } }),
  );
  const pods = await waitForRunningPods(env, "lead", 3);
  // Only the lead broker finishes (KWOK completes it once it may): the followers keep running.
  await kubectl(
    env,
    "annotate",
    "pod",
    byIndex(pods, "0").metadata!.name!,
    "kwok.x-k8s.io/keep-running-",
  );
  const mc = await waitForCondition(env, "lead", "Succeeded", { status: "True" }, 60_000);
  assert.equal(conditionOf(mc, "Failed")?.status, "False");
  const job = await jobOf(env, "lead");
  const types = (job.status?.conditions ?? []).filter((c) => c.status === "True").map((c) =>
    c.type
  );
  assert.ok(types.includes("SuccessCriteriaMet"), `Job conditions: ${types}`);
  // The followers were stopped by the Job controller, not left running.
  await eventually(async () => {
    const left = (await podsOf(env, "lead")).filter((p) =>
      !p.metadata?.deletionTimestamp && p.status?.phase === "Running"
    );
    assert.deepEqual(left.map((p) => p.metadata?.name), []);
  }, { timeoutMs: 45_000, intervalMs: 500 });
  await waitForCondition(env, "lead", "Succeeded", { status: "True", reason: "JobComplete" });
}, { timeoutMs: 120_000 });

e2eTest("e2e queueing: scaling down and a crashed follower are not failures", async (env) => {
  await env.startOperator();
  await env.client.create(
    MiniClusters,
    miniCluster("elastic", env.namespace, { size: 4, pod: { annotations: KEEP_RUNNING } }),
  );
  let pods = await waitForRunningPods(env, "elastic", 4);

  await kubectl(env, "scale", "minicluster/elastic", "--replicas=2");
  await waitForRunningPods(env, "elastic", 2);
  await eventually(async () => {
    const job = await jobOf(env, "elastic");
    assert.equal(job.status?.active, 2);
    assert.equal(job.status?.failed ?? 0, 0, "removed followers are not failures");
  }, { timeoutMs: 30_000, intervalMs: 500 });

  // A follower crashes: it is retried, the cluster goes on.
  pods = await waitForRunningPods(env, "elastic", 2);
  const follower = byIndex(pods, "1");
  await env.client.patch(Pods, env.namespace, follower.metadata!.name!, {
    metadata: {
      annotations: { "kwok.x-k8s.io/keep-running": null, "kwok.x-k8s.io/exit-code": "1" },
    },
  }, "merge");
  await eventually(async () => {
    const job = await jobOf(env, "elastic");
    assert.equal(job.status?.failed, 1, "the crash is counted against backoffLimit");
  }, { timeoutMs: 30_000, intervalMs: 500 });
  const again = await waitForRunningPods(env, "elastic", 2);
  assert.notEqual(byIndex(again, "1").metadata?.uid, follower.metadata?.uid, "index 1 replaced");
  const mc = await getMiniCluster(env, "elastic");
  assert.equal(conditionOf(mc, "Failed")?.status, "False");
  await waitForCondition(env, "elastic", "Ready", { status: "True", reason: "PodsReady" });
}, { timeoutMs: 120_000 });
