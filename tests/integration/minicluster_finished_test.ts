// What ends a MiniCluster on the real apiserver. On a bare apiserver (no Job controller) the tests
// play its part and the kubelet's through the status subresources; on a full cluster the Job
// controller and KWOK play theirs, and the pods are kept running until a test ends them.
// - spec.cleanup: a bare pod wearing the labels of a MiniCluster's lead broker is not its lead
//   broker, and its completion ends nothing;
// - spec.cleanup: a failed lead broker (the Job replaces it) ends nothing; the Job failing does;
// - a reconcile from a stale view whose TTL ended does not delete a MiniCluster whose TTL was
//   raised meanwhile.
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { Jobs, Pods } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import {
  COMPLETION_INDEX_LABEL,
  JOB_NAME_LABEL,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  MINICLUSTER_LABEL,
} from "../../controllers/minicluster/children/names.ts";
import { eventually, fullCluster, integrationTest, type TestEnv } from "../harness.ts";
import {
  eventsFor,
  getMiniCluster,
  type InProcessOperator,
  miniCluster,
  quiescent,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

const getJob = (env: TestEnv, name: string) => env.client.get<Job>(Jobs, env.namespace, name);

/** KWOK keeps the Job's pods running (a full cluster would otherwise finish the Job by itself). */
const KEEP_RUNNING = { annotations: { "kwok.x-k8s.io/keep-running": "true" } };

/** A condition time: the API keeps seconds. */
const stamp = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, "Z");

/** Sets the pod's phase through the status subresource and waits until the operator reacted. */
async function podPhase(
  env: TestEnv,
  op: InProcessOperator,
  name: string,
  status: Pod["status"],
): Promise<void> {
  const before = op.reconciles();
  await env.client.patch(Pods, env.namespace, name, { status }, "merge", {
    subresource: "status",
  });
  // The pod's label maps it to the MiniCluster: a reconcile follows, then the operator settles.
  await eventually(() => assert.ok(op.reconciles() > before, "reconciled after the pod"));
  await quiescent(op, 1_500);
}

integrationTest(
  "minicluster finished: a forged lead-broker pod that completes does not end a cleanup MiniCluster",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async (op) => {
      await client.create(
        MiniClusters,
        miniCluster("victim", namespace, { cleanup: true, pod: KEEP_RUNNING }),
      );
      await eventually(() => getJob(env, "victim"), { timeoutMs: 20_000 });
      await quiescent(op, 1_000);

      // Anyone who may create pods in the namespace can wear the labels; only the Job controller
      // makes the Job's pods (their controller is the Job). No node takes it: its phase is ours.
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
        spec: {
          containers: [{ name: "c", image: "busybox", command: ["true"] }],
          nodeSelector: { "minicluster.flux-framework.org/no-such-node": "true" },
        },
      });
      await podPhase(env, op, "victim-0-forged", { phase: "Succeeded" });

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
      await client.create(
        MiniClusters,
        miniCluster("evicted", namespace, { cleanup: true, pod: KEEP_RUNNING }),
      );
      const job = await eventually(() => getJob(env, "evicted"), { timeoutMs: 20_000 });
      await quiescent(op, 1_000);

      // The Job's own lead-broker pod is evicted: the Job controller makes another.
      const lead = fullCluster()
        ? await eventually(async () => {
          const pods = await client.list<Pod>(Pods, {
            namespace,
            labelSelector: `${JOB_NAME_LABEL}=evicted,${COMPLETION_INDEX_LABEL}=0`,
          });
          assert.ok(pods.items[0], "the Job controller made the lead broker's pod");
          return pods.items[0];
        }, { timeoutMs: 20_000 })
        : await client.create<Pod>(Pods, {
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
      await podPhase(env, op, lead.metadata!.name!, {
        phase: "Failed",
        reason: "Evicted",
        message: "The node was low on resource: memory.",
      });
      const kept = await getMiniCluster(env, "evicted").catch((e) => {
        if (isNotFound(e)) return undefined;
        throw e;
      });
      assert.ok(kept && !kept.metadata?.deletionTimestamp, "kept while the Job goes on");

      // The Job runs out of time and fails: the Job controller says so (here, or the test does).
      await client.patch(
        MiniClusters,
        namespace,
        "evicted",
        { spec: { deadlineSeconds: 1 } },
        "merge",
      );
      if (!fullCluster()) {
        const now = stamp(new Date());
        const failed = (type: string) => ({
          type,
          status: "True",
          reason: "DeadlineExceeded",
          message: "Job was active longer than specified deadline",
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
      }
      await eventually(async () => {
        const mc = await getMiniCluster(env, "evicted").catch((e) => {
          if (isNotFound(e)) return undefined;
          throw e;
        });
        assert.ok(!mc || mc.metadata?.deletionTimestamp, "deleted once the Job failed");
      }, { timeoutMs: 30_000, intervalMs: 200 });
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
    const ttl = (seconds: number) =>
      client.patch(
        MiniClusters,
        namespace,
        "raised",
        { spec: { ttlSecondsAfterFinished: seconds } },
        "merge",
      );
    await withOperator(env, async (op) => {
      await client.create(
        MiniClusters,
        miniCluster("raised", namespace, { ttlSecondsAfterFinished: 3600 }),
      );
      await eventually(() => getJob(env, "raised"), { timeoutMs: 20_000 });
      // On a full cluster the Job controller and KWOK finish the Job by themselves.
      if (!fullCluster()) {
        const ago = stamp(new Date(Date.now() - 120_000));
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
      }
      await waitForCondition(env, "raised", "Succeeded", "True");
      await quiescent(op, 1_000);
    });
    // While no operator runs: a version whose TTL has ended (what a lagging cache would still
    // hold), then the user raises the TTL again.
    await ttl(1);
    const stale = await getMiniCluster(env, "raised");
    await ttl(3600);

    await withOperator(env, async (op) => {
      // The caches have synced: they hold the finished Job, and the live MiniCluster.
      await op.reconcile(stale);
      const live = await getMiniCluster(env, "raised");
      assert.equal(live.metadata?.deletionTimestamp, undefined, "not deleted from the stale view");
      assert.equal(live.spec?.ttlSecondsAfterFinished, 3600);
      const reasons = (await eventsFor(env, "raised")).map((e) => e.reason);
      assert.ok(!reasons.includes("TTLExpired"), `events: ${reasons.join(", ")}`);
    });
  },
  { timeoutMs: 90_000 },
);
