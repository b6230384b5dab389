// Flux's queue, observed (issue 39, item 1), on real nodes: a MiniCluster with
// spec.flux.queueReport runs the reporter beside its lead broker, and the operator (in-cluster,
// from deploy/install.yaml, without pods/exec) reads it from the lead pod's IP and shows it in
// the status. The jobs are submitted through `kubectl exec` by the test, as a user would.
//
//   ./task cluster up --real-nodes 2      (as root; builds what it needs the first time)
//   deno test -A tests/real/queue_report_test.ts

import assert from "node:assert/strict";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
import { eventually } from "../harness.ts";
import {
  kubectl,
  podsReport,
  REAL_NAMESPACE,
  type RealEnv,
  realMiniCluster,
  realTest,
} from "./env.ts";

type FluxQueue = NonNullable<NonNullable<MiniCluster["status"]>["fluxQueue"]>;

async function observed(env: RealEnv, name: string): Promise<[Condition?, FluxQueue?]> {
  const mc = await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name);
  const c = (mc.status?.conditions as Condition[] | undefined)?.find((c) =>
    c.type === "FluxQueueObserved"
  );
  return [c, mc.status?.fluxQueue];
}

/** Waits until the status shows a queue that `wanted` accepts; returns it. */
async function queueWhere(
  env: RealEnv,
  name: string,
  what: string,
  wanted: (q: FluxQueue) => boolean,
  timeoutMs = 120_000,
): Promise<FluxQueue> {
  try {
    return await eventually(async () => {
      const [c, q] = await observed(env, name);
      if (c?.status !== "True" || !q || !wanted(q)) {
        throw new Error(
          `${name}: waiting for ${what}; FluxQueueObserved ${c?.status} ${c?.reason}: ` +
            `${c?.message}; status.fluxQueue ${JSON.stringify(q)}`,
        );
      }
      return q;
    }, { timeoutMs, intervalMs: 1000 });
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${await podsReport(REAL_NAMESPACE)}`);
  }
}

async function leadPod(env: RealEnv, name: string): Promise<string> {
  const pod = (await env.pods(name)).find((p) =>
    p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] === "0"
  );
  if (!pod) throw new Error(`${name}: no lead pod`);
  return pod.metadata!.name!;
}

realTest(
  "real: the operator reads the lead broker's queue: 1 running and 1 pending of -N2, then idle",
  async (env) => {
    const name = "queue";
    await env.apply(realMiniCluster(name, {
      size: 2,
      interactive: true,
      flux: { container: { image: FLUX_VIEW_IMAGE }, queueReport: { intervalSeconds: 10 } },
    }));

    // Both brokers up, nothing submitted: the report says so.
    const idle = await queueWhere(
      env,
      name,
      "2 free nodes and no job",
      (q) => q.nodes?.total === 2 && q.nodes?.free === 2 && q.jobs?.pending === 0,
      180_000,
    );
    assert.deepEqual(idle.jobs, { pending: 0, running: 0 });
    assert.equal(idle.nodes?.allocated, 0);

    // Two jobs of both nodes: one runs, the other waits for it.
    const lead = await leadPod(env, name);
    await env.exec(
      lead,
      name,
      ["bash", "/mnt/flux/flux-connect.sh"],
      "flux submit -N2 sleep 30\nflux submit -N2 sleep 30\n",
    );
    const busy = await queueWhere(
      env,
      name,
      "1 running and 1 pending",
      (q) => q.jobs?.running === 1 && q.jobs?.pending === 1,
    );
    assert.equal(busy.nodes?.allocated, 2, JSON.stringify(busy));
    assert.equal(busy.nodes?.free, 0, JSON.stringify(busy));
    assert.equal(busy.pendingNodes, 2, JSON.stringify(busy));
    assert.equal(busy.largestPendingJobNodes, 2, JSON.stringify(busy));

    // Both done (30 s each, one after the other): idle again.
    const done = await queueWhere(
      env,
      name,
      "no job left",
      (q) => q.jobs?.running === 0 && q.jobs?.pending === 0 && q.nodes?.allocated === 0,
      150_000,
    );
    assert.equal(done.pendingNodes, 0);

    // The condition came with one Normal Event (that the operator has no pods/exec right is the
    // ClusterRole's: tests/unit/cluster_role_test.ts).
    const events = await kubectl([
      "-n",
      REAL_NAMESPACE,
      "get",
      "events",
      "--field-selector",
      `involvedObject.name=${name},reason=Observed`,
      "-o",
      "jsonpath={.items[*].type}",
    ]);
    const types = events.trim().split(/\s+/);
    assert.ok(types.length >= 1 && types.every((t) => t === "Normal"), events);
  },
  { timeoutMs: 480_000 },
);
