// Scaling through the scale subresource (kubectl scale): within [1, maxSize] the Job's
// parallelism/completions and status.size follow; beyond the maxSize the brokers were started
// with the Job is clamped, a condition and an event say so, and the user's spec is left as written.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, integrationTest, kubectl } from "../harness.ts";
import {
  eventsFor,
  getMiniCluster,
  miniCluster,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

async function jobSize(
  env: { client: import("../../runtime/client/client.ts").KubeClient; namespace: string },
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

    // The CRD refuses size > maxSize, but maxSize may be raised later: the limit stays the
    // maxSize the brokers were started with (their hostlist has 4 entries).
    await env.client.patch(
      MiniClusters,
      env.namespace,
      "elastic",
      { spec: { maxSize: 8 } },
      "merge",
    );
    await kubectl(env, "scale", "minicluster/elastic", "--replicas=7");
    const clamped = await waitForCondition(env, "elastic", "SizeClamped", "True", "AboveMaximum");
    assert.match(clamped.message, /requested size 7 is above the maximum 4/);
    await jobSize(env, 4);
    const mc = await getMiniCluster(env, "elastic");
    assert.equal(mc.spec.size, 7, "the user's spec is left untouched");
    assert.equal(mc.spec.maxSize, 8);
    await eventually(async () => {
      const mc = await getMiniCluster(env, "elastic");
      assert.equal(mc.status?.size, 4);
      assert.equal(mc.status?.maximumSize, 4);
    });
    await eventually(async () => {
      const events = await eventsFor(env, "elastic");
      assert.ok(events.some((e) => e.reason === "AboveMaximum" && e.type === "Warning"));
    });

    await kubectl(env, "scale", "minicluster/elastic", "--replicas=1");
    await waitForCondition(env, "elastic", "SizeClamped", "False", "WithinBounds");
    await jobSize(env, 1);
  });
}, { timeoutMs: 90_000 });

integrationTest("minicluster scale: without maxSize the first size is the limit", async (env) => {
  await withOperator(env, async () => {
    await env.client.create(MiniClusters, miniCluster("elastic", env.namespace, { size: 2 }));
    await jobSize(env, 2);
    await kubectl(env, "scale", "minicluster/elastic", "--replicas=5");
    await waitForCondition(env, "elastic", "SizeClamped", "True", "AboveMaximum");
    await jobSize(env, 2);
    await kubectl(env, "scale", "minicluster/elastic", "--replicas=1");
    await waitForCondition(env, "elastic", "SizeClamped", "False", "WithinBounds");
    await jobSize(env, 1);
  });
}, { timeoutMs: 60_000 });
