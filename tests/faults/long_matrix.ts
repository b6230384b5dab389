// The long version (`deno task faults`, FAULTS_LONG=1): crash after every write of every reconcile
// path, every stale/missed-view scenario, the apiserver restart and the leader failover. Not named
// *_test.ts, so `deno task test` and `deno task test:faults` do not pick it up (they run the CI
// subset beside it: crash_test.ts, views_test.ts, failover_test.ts); `deno task faults` names this
// file explicitly.
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { kubeconfigPath } from "../harness.ts";
import { crashMatrix, PATHS } from "./crash.ts";
import { apiserverRestart, leaderFailover } from "./failover.ts";
import { runViewScenarios } from "./views.ts";
import { VIEW_SCENARIOS } from "./view_scenarios.ts";
import { type PlanResult, printSummary, SEED } from "./env.ts";

const CONCURRENCY = Number(Deno.env.get("FAULTS_CONCURRENCY") ?? 6);

Deno.test({
  name: "faults (long): the whole matrix",
  async fn() {
    const kubeconfig = await kubeconfigPath();
    const client = await KubeClient.fromKubeconfig(kubeconfig);
    try {
      const crash = await crashMatrix(client, kubeconfig, PATHS, {
        all: true,
        concurrency: CONCURRENCY,
      });
      printSummary("crash at every write", crash);
      const views = await runViewScenarios(client, kubeconfig, VIEW_SCENARIOS, CONCURRENCY);
      printSummary("stale and missed views", views);
      const other: PlanResult[] = [];
      for (
        const [plan, fn] of [
          ["apiserver restart mid-run", () => apiserverRestart()],
          ["leader failover (SIGKILL mid-work)", () => leaderFailover(client, kubeconfig)],
        ] as const
      ) {
        const t = performance.now();
        try {
          other.push({
            plan,
            ok: true,
            detail: await fn(),
            seconds: (performance.now() - t) / 1000,
          });
        } catch (e) {
          other.push({
            plan,
            ok: false,
            detail: (e as Error).message,
            seconds: (performance.now() - t) / 1000,
          });
        }
      }
      printSummary("restart and failover", other);
      const all = [...crash, ...views, ...other];
      const failed = all.filter((r) => !r.ok);
      console.log(
        `[faults] TOTAL: ${all.length} plans run, ${failed.length} failures (seed ${SEED})`,
      );
      assert.equal(failed.length, 0, failed.map((r) => `${r.plan}: ${r.detail}`).join("\n\n"));
    } finally {
      client.close();
    }
  },
});
