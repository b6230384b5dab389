// Counted writes: once a MiniCluster has converged, reconciling it again — directly, through a
// metadata change, or after an operator restart with empty caches — makes zero write requests
// (counted through the client's onRequest hook).
import assert from "node:assert/strict";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, fullCluster, integrationTest } from "../harness.ts";
import {
  type InProcessOperator,
  miniCluster,
  quiescent,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

function byVerb(op: InProcessOperator, from = 0): Record<string, number> {
  const out: Record<string, number> = {};
  for (const w of op.writes().slice(from)) {
    const k = `${w.verb} ${w.resource}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

integrationTest("minicluster writes: a converged MiniCluster costs zero writes", async (env) => {
  const { client, namespace } = env;
  const spec = { size: 2, pod: { annotations: { "kwok.x-k8s.io/keep-running": "true" } } };
  await withOperator(env, async (op) => {
    await client.create(MiniClusters, miniCluster("calm", namespace, spec));
    if (fullCluster()) await waitForCondition(env, "calm", "Ready", "True", "PodsReady", 60_000);
    else await waitForCondition(env, "calm", "Ready", "False", "PodsNotReady");
    const converged = await quiescent(op);
    console.log("writes to converge:", byVerb(op));

    // 1. A direct reconcile of the stored object.
    const mc = await client.get<MiniCluster>(MiniClusters, namespace, "calm");
    await op.reconcile(mc);
    assert.deepEqual(byVerb(op, converged), {}, "a direct reconcile writes nothing");

    // 2. A metadata change the controller reacts to, but that changes nothing desired.
    await client.patch(MiniClusters, namespace, "calm", {
      metadata: { annotations: { "example.com/touched": "yes" } },
    }, "merge");
    await new Promise((r) => setTimeout(r, 1_500));
    assert.deepEqual(byVerb(op, converged), {}, "an annotation change writes nothing");
  });

  // 3. A new operator process: empty caches, fresh client, same cluster. Its caches show every
  // child, so it reads nothing either (the lists and watches aside).
  await withOperator(env, async (op) => {
    await eventually(() => {
      if (op.reconciles() === 0) throw new Error("the new operator has not reconciled yet");
    });
    await new Promise((r) => setTimeout(r, 1_500));
    assert.deepEqual(byVerb(op), {}, "a restarted operator writes nothing");
    const reads = op.requests.filter((r) => r.verb === "get").map((r) => r.resource);
    assert.deepEqual(reads, [], "nor reads anything");
  });
}, { timeoutMs: 120_000 });
