// What ends a MiniCluster on the real apiserver (no Job controller here: the tests play its part
// and the kubelet's through the status subresources):
// - spec.cleanup: a bare pod wearing the labels of a MiniCluster's lead broker is not its lead
//   broker, and its completion ends nothing;
// - spec.cleanup: a failed lead broker (the Job replaces it) ends nothing; the Job failing does;
// - a reconcile from a stale view whose TTL ended does not delete a MiniCluster whose TTL was
//   raised meanwhile.
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { isNotFound } from "../../runtime/errors.ts";
import { silentLog } from "../../runtime/log.ts";
import { Jobs, Pods } from "../../runtime/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import {
  COMPLETION_INDEX_LABEL,
  JOB_NAME_LABEL,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  MINICLUSTER_LABEL,
} from "../../controllers/minicluster/children/names.ts";
import { eventually, integrationTest, type TestEnv } from "../harness.ts";
import {
  eventsFor,
  getMiniCluster,
  miniCluster,
  quiescent,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

const getJob = (env: TestEnv, name: string) => env.client.get<Job>(Jobs, env.namespace, name);

integrationTest(
  "minicluster finished: a forged lead-broker pod that completes does not end a cleanup MiniCluster",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async (op) => {
      await client.create(MiniClusters, miniCluster("victim", namespace, { cleanup: true }));
      await eventually(() => getJob(env, "victim"), { timeoutMs: 20_000 });
      await quiescent(op, 1_000);

      // Anyone who may create pods in the namespace can wear the labels; only the Job controller
      // makes the Job's pods (their controller is the Job).
      await client.create<Pod>(Pods, {
        metadata: {
          name: "victim-0-forged",
          namespace,
          labels: {
            [JOB_NAME_LABEL]: "victim",
            [COMPLETION_INDEX_LABEL]: "0",
            [MINICLUSTER_LABEL]: "victim",
            [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
          },
        },
        spec: { containers: [{ name: "c", image: "busybox", command: ["true"] }] },
      });
      const before = op.reconciles();
      await client.patch(
        Pods,
        namespace,
        "victim-0-forged",
        { status: { phase: "Succeeded" } },
        "merge",
        { subresource: "status" },
      );
      // The operator saw the pod finish (its label maps it to the MiniCluster) and settled.
      await eventually(() => assert.ok(op.reconciles() > before, "reconciled after the pod"));
      await quiescent(op, 1_500);

      const mc = await getMiniCluster(env, "victim");
      assert.equal(mc.metadata?.deletionTimestamp, undefined, "the MiniCluster is not deleted");
      const reasons = (await eventsFor(env, "victim")).map((e) => e.reason);
      assert.ok(!reasons.includes("CleanupAfterCompletion"), `events: ${reasons.join(", ")}`);
    });
  },
  { timeoutMs: 90_000 },
);

integrationTest(
  "minicluster finished: cleanup waits for the Job to fail, not for its lead broker's pod to",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async (op) => {
      await client.create(MiniClusters, miniCluster("evicted", namespace, { cleanup: true }));
      const job = await eventually(() => getJob(env, "evicted"), { timeoutMs: 20_000 });
      await quiescent(op, 1_000);

      // The Job's own lead-broker pod, evicted: the Job controller would make another.
      await client.create<Pod>(Pods, {
        metadata: {
          name: "evicted-0-abcde",
          namespace,
          labels: { ...job.spec?.template.metadata?.labels, [COMPLETION_INDEX_LABEL]: "0" },
          ownerReferences: [{
            apiVersion: "batch/v1",
            kind: "Job",
            name: "evicted",
            uid: job.metadata!.uid!,
            controller: true,
          }],
        },
        spec: { containers: [{ name: "c", image: "busybox", command: ["true"] }] },
      });
      const before = op.reconciles();
      await client.patch(
        Pods,
        namespace,
        "evicted-0-abcde",
        { status: { phase: "Failed", reason: "Evicted" } },
        "merge",
        { subresource: "status" },
      );
      await eventually(() => assert.ok(op.reconciles() > before, "reconciled after the pod"));
      await quiescent(op, 1_500);
      const kept = await getMiniCluster(env, "evicted");
      assert.equal(kept.metadata?.deletionTimestamp, undefined, "kept while the Job goes on");

      // The Job controller gives up (backoffLimit): the Job fails.
      const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
      const failed = (type: string) => ({
        type,
        status: "True",
        reason: "BackoffLimitExceeded",
        message: "Job has reached the specified backoff limit",
        lastProbeTime: now,
        lastTransitionTime: now,
      });
      await client.patch(
        Jobs,
        namespace,
        "evicted",
        {
          status: {
            startTime: now,
            failed: 1,
            conditions: [failed("FailureTarget"), failed("Failed")],
          },
        },
        "merge",
        { subresource: "status" },
      );
      await eventually(async () => {
        const mc = await getMiniCluster(env, "evicted").catch((e) => {
          if (isNotFound(e)) return undefined;
          throw e;
        });
        assert.ok(!mc || mc.metadata?.deletionTimestamp, "deleted once the Job failed");
      }, { timeoutMs: 20_000, intervalMs: 200 });
      await eventually(async () => {
        const events = await eventsFor(env, "evicted");
        const cleanup = events.find((e) => e.reason === "CleanupAfterCompletion");
        assert.match(cleanup?.message ?? "", /the Job failed and spec\.cleanup is true/);
      });
    });
  },
  { timeoutMs: 90_000 },
);

integrationTest(
  "minicluster finished: a stale view whose TTL ended does not delete the MiniCluster whose TTL was raised",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async (op) => {
      await client.create(
        MiniClusters,
        miniCluster("raised", namespace, { ttlSecondsAfterFinished: 60 }),
      );
      await eventually(() => getJob(env, "raised"), { timeoutMs: 20_000 });
      await quiescent(op, 1_000);
    });
    // What a lagging cache would hold: the MiniCluster as it was before the user raised its TTL.
    const stale = await getMiniCluster(env, "raised");
    await client.patch(
      MiniClusters,
      namespace,
      "raised",
      { spec: { ttlSecondsAfterFinished: 3600 } },
      "merge",
    );
    // The Job finished two minutes ago: the stale view's TTL has ended, the live one's has not.
    const ago = new Date(Date.now() - 120_000).toISOString().replace(/\.\d{3}Z$/, "Z");
    const complete = (type: string) => ({
      type,
      status: "True",
      reason: "SuccessPolicy",
      message: "",
      lastProbeTime: ago,
      lastTransitionTime: ago,
    });
    await client.patch(
      Jobs,
      namespace,
      "raised",
      {
        status: {
          startTime: ago,
          completionTime: ago,
          succeeded: 1,
          completedIndexes: "0",
          conditions: [complete("SuccessCriteriaMet"), complete("Complete")],
        },
      },
      "merge",
      { subresource: "status" },
    );
    await withOperator(env, async (op) => {
      // The operator has seen the finished Job (it reports it from the live view).
      await waitForCondition(env, "raised", "Succeeded", "True");
      await op.reconciler.reconcile(stale, {
        key: `${namespace}/raised`,
        namespace,
        name: "raised",
        retries: 0,
        signal: new AbortController().signal,
        log: silentLog,
      });
      const live = await getMiniCluster(env, "raised");
      assert.equal(live.metadata?.deletionTimestamp, undefined, "not deleted from the stale view");
      assert.equal(live.spec?.ttlSecondsAfterFinished, 3600);
      const reasons = (await eventsFor(env, "raised")).map((e) => e.reason);
      assert.ok(!reasons.includes("TTLExpired"), `events: ${reasons.join(", ")}`);
    });
  },
  { timeoutMs: 90_000 },
);
