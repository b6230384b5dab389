// The operator process under load (issue 18, defect 14, and the --namespaces stream limit): SIGTERM
// ends it promptly after hundreds of MiniClusters (it once stayed alive 10–13 s after logging
// "shutting down"), and watching ~40 namespaces does not starve its ordinary requests (about six
// watches a namespace on one HTTP/2 connection went past the apiserver's stream limit, and no
// reconcile finished).
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs, Namespaces } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { OperatorProcess } from "../../testing/operator_process.ts";
import { eventually, integrationTest } from "../harness.ts";
import { miniCluster } from "./minicluster_operator.ts";

const N = Number(Deno.env.get("MC_SHUTDOWN_N") ?? 300);
/** The Go operator exits within a few seconds; so must this one, at any scale. */
const EXIT_BUDGET_MS = 3_000;

async function createMany(
  env: { client: import("../../runtime/client/client.ts").KubeClient },
  ns: string,
  n: number,
) {
  const queue = Array.from({ length: n }, (_, i) => i);
  await Promise.all(Array.from({ length: 16 }, async () => {
    for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
      await env.client.create(MiniClusters, miniCluster(`s${i}`, ns, { size: 2 }));
    }
  }));
}

integrationTest(
  `operator process: SIGTERM after ${N} MiniClusters exits within ${EXIT_BUDGET_MS} ms`,
  async (env) => {
    const op = await OperatorProcess.start({
      kubeconfig: env.kubeconfig,
      namespaces: [env.namespace],
    });
    try {
      await op.ready();
      await createMany(env, env.namespace, N);
      // Mid-flight: many MiniClusters have their Job, reconciles and status writes still going.
      await eventually(async () => {
        const jobs = await env.client.list<Job>(Jobs, { namespace: env.namespace });
        assert.ok(jobs.items.length >= N / 4, `${jobs.items.length} Jobs`);
      }, { timeoutMs: 120_000, intervalMs: 500 });
      const t0 = performance.now();
      const code = await op.stop(30_000);
      const ms = performance.now() - t0;
      console.log(`exit ${ms.toFixed(0)} ms after SIGTERM (N=${N}), code ${code}`);
      if (ms > 1_000) console.log(op.logTail(15));
      assert.equal(code, 0, op.logTail(20));
      assert.ok(ms < EXIT_BUDGET_MS, `exit took ${ms.toFixed(0)} ms:\n${op.logTail(20)}`);
    } finally {
      await op.kill();
    }
  },
  { timeoutMs: 240_000 },
);

integrationTest(
  "operator process: watching 40 namespaces still reconciles",
  async (env) => {
    const namespaces = Array.from({ length: 40 }, (_, i) => `${env.namespace}-${i}`);
    await Promise.all(
      namespaces.map((name) => env.client.create(Namespaces, { metadata: { name } })),
    );
    const op = await OperatorProcess.start({ kubeconfig: env.kubeconfig, namespaces });
    try {
      await op.ready();
      const last = namespaces[namespaces.length - 1];
      await env.client.create(MiniClusters, miniCluster("far", last, { size: 2 }));
      await eventually(() => env.client.get<Job>(Jobs, last, "far"), { timeoutMs: 20_000 });
      const code = await op.stop(30_000);
      assert.equal(code, 0);
    } finally {
      await op.kill();
      await Promise.all(
        namespaces.map((name) => env.client.delete(Namespaces, undefined, name).catch(() => {})),
      );
    }
  },
  { timeoutMs: 120_000 },
);
