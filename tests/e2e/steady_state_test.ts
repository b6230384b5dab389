// Steady state: once the MiniClusters are Ready, the operator makes no writes, counted by verb from
// its own api_requests_total; and an operator started over an already converged namespace (after a
// SIGKILL) reconciles everything without writing anything either.
import assert from "node:assert/strict";
import { MiniClusters } from "../../api/resource.ts";
import {
  e2eTest,
  eventsOf,
  eventually,
  KEEP_RUNNING,
  miniCluster,
  waitForCondition,
  waitForRunningPods,
} from "./env.ts";
import { groupBy, sumOf, WRITE_VERBS, writeCount } from "../../testing/metrics_text.ts";
import type { OperatorProcess } from "../../testing/operator_process.ts";

const IDLE_WINDOW_MS = Number(Deno.env.get("MC_E2E_IDLE_MS") ?? 20_000);
const NAMES = ["alpha", "beta", "gamma"];

async function writesByVerb(op: OperatorProcess): Promise<Record<string, number>> {
  const byVerb = groupBy(await op.metrics(), "api_requests_total", "verb");
  return Object.fromEntries(Object.entries(byVerb).filter(([v]) => WRITE_VERBS.includes(v)));
}

async function reconciles(op: OperatorProcess): Promise<number> {
  return sumOf(await op.metrics(), "reconcile_total", { controller: "minicluster" });
}

e2eTest("e2e steady state: no writes while idle, none after a restart", async (env) => {
  const op = await env.startOperator();
  for (const name of NAMES) {
    await env.client.create(
      MiniClusters,
      miniCluster(name, env.namespace, { size: 2, pod: { annotations: KEEP_RUNNING } }),
    );
  }
  for (const name of NAMES) {
    await waitForRunningPods(env, name, 2);
    await waitForCondition(env, name, "Ready", { status: "True" });
  }
  // The PodsReady Events go out after the status write that the condition shows: wait for them,
  // then let the last watch echoes settle before the window opens.
  await eventually(async () => {
    for (const name of NAMES) {
      const reasons = (await eventsOf(env, name)).map((e) => e.reason);
      assert.ok(reasons.includes("PodsReady"), `${name}'s Events: ${reasons.join(", ")}`);
    }
  }, { timeoutMs: 30_000 });
  await new Promise((r) => setTimeout(r, 1000));

  const before = await writesByVerb(op);
  const reconcilesBefore = await reconciles(op);
  await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
  const after = await writesByVerb(op);
  assert.deepEqual(after, before, `writes during a ${IDLE_WINDOW_MS} ms idle window`);
  assert.ok(Object.values(before).reduce((a, b) => a + b, 0) > 0, "it did write while converging");
  console.log(
    `idle ${IDLE_WINDOW_MS} ms: 0 writes, ${
      (await reconciles(op)) - reconcilesBefore
    } reconciles; writes to converge: ${JSON.stringify(before)}`,
  );

  const next = await env.restartOperator(op);
  // Every MiniCluster is reconciled once at start-up; none of those reconciles may write.
  await eventually(async () => assert.ok(await reconciles(next) >= NAMES.length), {
    timeoutMs: 20_000,
  });
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(writeCount(await next.metrics()), 0, "writes after a restart over converged state");
  await next.stop();
}, { timeoutMs: 120_000 });
