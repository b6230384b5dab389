// An apiserver restart mid-run (a private etcd + kube-apiserver) and a leader failover between two
// operator replicas (SIGKILL mid-work): no lost or doubled work.
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { kubeconfigPath } from "../harness.ts";
import { apiserverRestart, leaderFailover } from "./failover.ts";
import { type PlanResult, printSummary } from "./env.ts";

async function timed(plan: string, fn: () => Promise<string>): Promise<PlanResult> {
  const t0 = performance.now();
  try {
    return { plan, ok: true, detail: await fn(), seconds: (performance.now() - t0) / 1000 };
  } catch (e) {
    return {
      plan,
      ok: false,
      detail: (e as Error).message,
      seconds: (performance.now() - t0) / 1000,
    };
  }
}

Deno.test("faults: apiserver restart mid-run and leader failover lose and double nothing", async () => {
  const kubeconfig = await kubeconfigPath();
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    const results = await Promise.all([
      timed("apiserver restart mid-run", () => apiserverRestart()),
      timed("leader failover (SIGKILL mid-work)", () => leaderFailover(client, kubeconfig)),
    ]);
    printSummary("restart and failover", results);
    const failed = results.filter((r) => !r.ok);
    assert.equal(failed.length, 0, failed.map((r) => `${r.plan}: ${r.detail}`).join("\n\n"));
  } finally {
    client.close();
  }
});
