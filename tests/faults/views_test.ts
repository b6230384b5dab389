// Stale and missed views, CI subset: delayed and dropped watch events, a coalesced
// delete-and-recreate, a stale list, 410 Gone, 429/500/503, connection resets and an unreachable
// apiserver, each between the operator process and the apiserver through the fault proxy. The
// remaining scenarios run with `deno task faults`.
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { kubeconfigPath } from "../harness.ts";
import { runViewScenarios } from "./views.ts";
import { VIEW_SCENARIOS } from "./view_scenarios.ts";
import { printSummary } from "./env.ts";

Deno.test("faults: stale and missed views converge, without stale writes or request storms", async () => {
  const kubeconfig = await kubeconfigPath();
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    const results = await runViewScenarios(
      client,
      kubeconfig,
      VIEW_SCENARIOS.filter((s) => s.ci),
      5,
    );
    printSummary("stale and missed views (CI subset)", results);
    const failed = results.filter((r) => !r.ok);
    assert.equal(failed.length, 0, failed.map((r) => `${r.plan}: ${r.detail}`).join("\n\n"));
  } finally {
    client.close();
  }
});
