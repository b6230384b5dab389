// Scaling through the scale subresource (kubectl scale): within [1, maxSize] the Job's
// parallelism/completions and status.size follow; beyond maxSize the Job is clamped, a condition
// and an event say so, and the user's spec is left as written.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs, MiniClusters } from "../../runtime/resources.ts";
import { eventually, integrationTest, kubectl } from "../harness.ts";
import {
  eventsFor,
  getMiniCluster,
  miniCluster,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

async function jobSize(
  env: { client: import("../../runtime/client.ts").KubeClient; namespace: string },
  want: number,
) {
  await eventually(async () => {
    const job = await env.client.get<Job>(Jobs, env.namespace, "elastic");
    assert.equal(job.spec?.parallelism, want);
    assert.equal(job.spec?.completions, want);
  }, { timeoutMs: 20_000 });
}

integrationTest("minicluster scale: kubectl scale within and beyond maxSize", async (env) => {
  await withOperator(env, async () => {
    await env.client.create(
      MiniClusters,
      miniCluster("elastic", env.namespace, {
        size: 2,
        maxSize: 4,
        pod: { annotations: { "kwok.x-k8s.io/keep-running": "true" } },
      }),
    );
    await jobSize(env, 2);

    await kubectl(env, "scale", "minicluster/elastic", "--replicas=3");
    await jobSize(env, 3);
    await eventually(async () =>
      assert.equal((await getMiniCluster(env, "elastic")).status?.size, 3)
    );
    await eventually(async () => {
      const events = await eventsFor(env, "elastic");
      assert.ok(events.some((e) => e.reason === "Scaled" && /from 2 to 3/.test(e.message ?? "")));
    });

    await kubectl(env, "scale", "minicluster/elastic", "--replicas=7");
    const clamped = await waitForCondition(env, "elastic", "SizeClamped", "True", "AboveMaximum");
    assert.match(clamped.message, /requested size 7 is above the maximum 4/);
    await jobSize(env, 4);
    const mc = await getMiniCluster(env, "elastic");
    assert.equal(mc.spec.size, 7, "the user's spec is left untouched");
    assert.equal(mc.status?.size, 4);
    assert.equal(mc.status?.maximumSize, 4);
    await eventually(async () => {
      const events = await eventsFor(env, "elastic");
      assert.ok(events.some((e) => e.reason === "AboveMaximum" && e.type === "Warning"));
    });

    // Raising maxSize later does not raise the limit: the hostlist was written for 4.
    await env.client.patch(
      MiniClusters,
      env.namespace,
      "elastic",
      { spec: { maxSize: 8 } },
      "merge",
    );
    await eventually(async () => {
      const mc = await getMiniCluster(env, "elastic");
      assert.equal(mc.status?.observedGeneration, mc.metadata?.generation);
      assert.equal(mc.status?.maximumSize, 4);
    });
    await jobSize(env, 4);

    await kubectl(env, "scale", "minicluster/elastic", "--replicas=1");
    await waitForCondition(env, "elastic", "SizeClamped", "False", "WithinBounds");
    await jobSize(env, 1);
  });
}, { timeoutMs: 90_000 });
