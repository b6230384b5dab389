// A lead broker whose run failed after its followers completed, with the real Job controller on
// KWOK nodes: the pods play what the scripts do (the followers exit 0 when the Flux instance
// ends, then the lead broker exits with the code of a failed run). The Job must fail at once: a
// new lead broker would wait for followers that the Job controller never starts again.
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { Pods } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { LEAD_FAILED_EXIT_CODE } from "../../controllers/minicluster/children/scripts/lead-finished.ts";
import {
  conditionOf,
  e2eTest,
  eventually,
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
  "e2e: a lead broker failing after its followers completed fails the MiniCluster at once",
  async (env) => {
    await env.startOperator();
    await env.client.create(
      MiniClusters,
      miniCluster("mpi", env.namespace, { size: 2, pod: { annotations: KEEP_RUNNING } }),
    );
    const pods = await waitForRunningPods(env, "mpi", 2);
    const finish = async (pod: Pod, exitCode: number) =>
      await env.client.patch(Pods, env.namespace, pod.metadata!.name!, {
        metadata: {
          annotations: {
            "kwok.x-k8s.io/keep-running": null,
            "kwok.x-k8s.io/exit-code": `${exitCode}`,
          },
        },
      }, "merge");

    // The instance ended: the follower exits cleanly and its index is complete.
    await finish(byIndex(pods, "1"), 0);
    await eventually(async () => {
      assert.equal((await jobOf(env, "mpi")).status?.completedIndexes, "1");
    }, { timeoutMs: 30_000, intervalMs: 500 });
    // Then the lead broker's script ends with the code of a failed run.
    const lead = byIndex(pods, "0");
    await finish(lead, LEAD_FAILED_EXIT_CODE);

    const mc = await waitForCondition(env, "mpi", "Failed", { status: "True" }, 45_000);
    const failed = conditionOf(mc, "Failed")!;
    assert.equal(failed.reason, "PodFailurePolicy");
    assert.match(failed.message ?? "", new RegExp(`exit code ${LEAD_FAILED_EXIT_CODE}`));
    assert.match(failed.message ?? "", /the lead broker's run failed/);
    // No lead broker was started again to wait for the completed follower.
    const job = await jobOf(env, "mpi");
    assert.ok(
      job.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True"),
      "the Job itself failed",
    );
    const leads = (await podsOf(env, "mpi")).filter((p) =>
      p.metadata?.labels?.[INDEX_LABEL] === "0"
    );
    assert.deepEqual(leads.map((p) => p.metadata?.uid), [lead.metadata?.uid]);
  },
  { timeoutMs: 120_000 },
);
