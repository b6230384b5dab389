// A lead broker whose run fails after its followers completed, on real nodes (issue 28: the Job
// restarted it and it waited for followers that never came, READY 1 / PodsNotReady until the
// MiniCluster was deleted). The MiniCluster must end Failed within a bound, and say why.
// Assertions read the pods, their logs and the Job, not the operator's own view alone.

import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import {
  LEAD_FAILED_EXIT_CODE,
  LEAD_FAILED_MESSAGE,
} from "../../controllers/minicluster/children/scripts/lead-finished.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { eventually } from "../harness.ts";
import { REAL_NAMESPACE, type RealEnv, realMiniCluster, realTest } from "./env.ts";

const INDEX_LABEL = "batch.kubernetes.io/job-completion-index";
/** From apply to Failed: image pulls are local, a run of two brokers takes seconds. */
const FAILED_WITHIN_MS = 180_000;

/** The job runs on both ranks, then the initial program fails: Flux's exit code is 3. */
const FAILING_RUN = { launcher: true, commands: { script: "flux run -N2 hostname\nexit 3" } };

/** Waits for `Failed` True; the condition and the seconds from `t0`. */
async function failedWithin(env: RealEnv, name: string, t0: number) {
  const failed = await eventually(async () => {
    const mc = await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name);
    const conditions = (mc.status?.conditions ?? []) as Condition[];
    const c = conditions.find((c) => c.type === "Failed");
    if (c?.status !== "True") {
      const ready = conditions.find((c) => c.type === "Ready");
      throw new Error(`${name}: Failed is ${c?.status}; Ready ${ready?.reason}: ${ready?.message}`);
    }
    return c;
  }, { timeoutMs: FAILED_WITHIN_MS, intervalMs: 1000 });
  return { failed, seconds: (performance.now() - t0) / 1000 };
}

const ofIndex = (pods: Pod[], index: number) =>
  pods.filter((p) => p.metadata?.labels?.[INDEX_LABEL] === `${index}`);

realTest(
  "real: a lead broker whose run fails after its followers completed fails the MiniCluster at once",
  async (env) => {
    const name = "lead-fails";
    const t0 = performance.now();
    await env.apply(realMiniCluster(name, { size: 2 }, FAILING_RUN));
    const { failed, seconds } = await failedWithin(env, name, t0);
    assert.equal(failed.reason, "PodFailurePolicy", failed.message);
    assert.ok(failed.message?.includes(LEAD_FAILED_MESSAGE), failed.message);
    console.log(
      `  size 2: kubectl apply to Failed (lead broker's run failed) in ${seconds.toFixed(1)} s`,
    );

    const pods = await env.pods(name);
    // One lead broker: none was started again to wait for the follower.
    const leads = ofIndex(pods, 0);
    assert.equal(leads.length, 1, `pods of index 0: ${leads.map((p) => p.metadata?.name)}`);
    const lead = leads[0];
    const status = lead.status?.containerStatuses?.find((c) => c.name === name);
    assert.equal(status?.restartCount, 0);
    assert.equal(status?.state?.terminated?.exitCode, LEAD_FAILED_EXIT_CODE);
    assert.match(status?.state?.terminated?.message ?? "", /ended with exit code 3;/);
    const log = await env.logs(lead.metadata!.name!, name);
    // The job ran on both ranks before the run failed.
    for (let i = 0; i < 2; i++) assert.match(log, new RegExp(`^${name}-${i}$`, "m"), log);
    assert.match(log, /The lead broker's Flux instance ended with exit code 3/, log);

    // The follower had exited cleanly with the instance: its index is complete.
    const job = await env.client.get<Job>(Jobs, REAL_NAMESPACE, name);
    assert.equal(job.status?.completedIndexes, "1", JSON.stringify(job.status));
    assert.ok(
      job.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True"),
      JSON.stringify(job.status?.conditions),
    );
  },
);

realTest(
  "real: under restartPolicy OnFailure a lead broker restarted after its run failed does not wait",
  async (env) => {
    const name = "lead-restarts";
    const mc = realMiniCluster(name, { size: 2, backoffLimit: 2 }, FAILING_RUN);
    mc.spec!.pod = { ...mc.spec!.pod, restartPolicy: "OnFailure" };
    const t0 = performance.now();
    await env.apply(mc);
    // The first run fails; the kubelet restarts the lead broker's container in its pod, whose
    // script fails at once; the second restart uses up backoffLimit.
    const { failed, seconds } = await failedWithin(env, name, t0);
    assert.equal(failed.reason, "BackoffLimitExceeded", failed.message);
    console.log(
      `  size 2, OnFailure, backoffLimit 2: kubectl apply to Failed in ${seconds.toFixed(1)} s`,
    );
    const job = await env.client.get<Job>(Jobs, REAL_NAMESPACE, name);
    assert.equal(job.status?.completedIndexes, "1", JSON.stringify(job.status));
  },
);
