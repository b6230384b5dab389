/**
 * Stale and missed views, in the manner of Sieve's stale-state and unobserved-state testing: the
 * fault proxy sits between the operator process and the apiserver and delays, drops or coalesces
 * watch events, serves an older list, answers 410 Gone, 429, 500 or 503, resets connections or
 * plays dead. Each scenario checks that
 *
 * - within 30 s after the faults stop the MiniCluster is converged (the spec oracle below) and the
 *   state is a fixpoint: a fresh operator process started on it changes nothing;
 * - nothing was deleted or overwritten on a stale view (uids kept, a stranger's object left alone,
 *   the Job's size never went back to an older spec's value, the certificate never regenerated);
 * - every DELETE carried a uid precondition and every finalizer edit a resourceVersion;
 * - while the apiserver is unreachable the operator backs off instead of storming it.
 */
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { ConfigMaps, Jobs, Secrets, Services } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { eventually } from "../harness.ts";
import type { OperatorProcess } from "../../testing/operator_process.ts";
import { FaultProxy } from "./proxy.ts";
import { describeDifference, snapshot } from "./snapshot.ts";
import { faultMiniCluster } from "./crash.ts";
import {
  assertGuardedWrites,
  type PlanResult,
  pool,
  quiesce,
  randomFor,
  startOperator,
  withNamespace,
} from "./env.ts";

/** After the faults stop, the operator has this long to converge. */
const CONVERGE_AFTER_HEAL_MS = 30_000;

export interface ViewContext {
  client: KubeClient;
  namespace: string;
  proxy: FaultProxy;
  /** The operator process running now. */
  operator(): OperatorProcess;
  /** This scenario's random stream (env.ts `randomFor`: FAULTS_SEED and the scenario's name). */
  random(): number;
  /** SIGKILL the operator and start a fresh one (through the same proxy). */
  restart(): Promise<void>;
  create(name: string, spec?: Partial<MiniCluster["spec"]>): Promise<MiniCluster>;
  patch(name: string, spec: Record<string, unknown>): Promise<MiniCluster>;
  /** Waits (≤ 30 s) until `names` are converged; resolves the milliseconds it took. */
  converged(names: string[]): Promise<number>;
}

export interface ViewScenario {
  name: string;
  /** Part of the CI subset (the rest runs with FAULTS_LONG=1). */
  ci: boolean;
  run(ctx: ViewContext): Promise<string>;
}

/**
 * The spec oracle: the status is current, and each child exists, is owned by this MiniCluster
 * (this uid) and shows the spec where it should (Job size, certificate present).
 */
export async function assertConverged(client: KubeClient, ns: string, name: string) {
  const mc = await client.get<MiniCluster>(MiniClusters, ns, name);
  const uid = mc.metadata?.uid;
  assert.ok(mc.metadata?.finalizers?.length, `${name}: no finalizer`);
  assert.equal(
    mc.status?.observedGeneration,
    mc.metadata?.generation,
    `${name}: status not current`,
  );
  const owned = (o: { metadata?: ObjectMeta }, what: string) =>
    assert.equal(
      o.metadata?.ownerReferences?.find((r) => r.controller)?.uid,
      uid,
      `${what} not owned by ${name}/${uid}`,
    );
  const job = await client.get<Job>(Jobs, ns, name);
  owned(job, "Job");
  const workspace = await client.get<MiniClusterWorkspace>(MiniClusterWorkspaces, ns, name);
  owned(workspace, "workspace");
  const maxSize = workspace.spec.maxSize;
  const size = Math.min(mc.spec?.size ?? 1, maxSize);
  assert.equal(job.spec?.parallelism, size, `${name}: Job parallelism`);
  assert.equal(mc.status?.size, size, `${name}: status.size`);
  owned(await client.get<ConfigMap>(ConfigMaps, ns, `${name}-entrypoint`), "entrypoint");
  owned(await client.get<Secret>(Secrets, ns, `${name}-curve-cert`), "curve Secret");
  owned(await client.get<Service>(Services, ns, name), "headless Service");
}

async function withViewEnv(
  client: KubeClient,
  kubeconfig: string,
  scenario: ViewScenario,
): Promise<string> {
  return await withNamespace(client, `views-${scenario.name}`, async (ns) => {
    const proxy = await FaultProxy.start({ kubeconfig });
    let op: OperatorProcess | undefined;
    try {
      op = await startOperator(proxy, ns);
      const ctx: ViewContext = {
        client,
        namespace: ns,
        proxy,
        random: randomFor(`view ${scenario.name}`),
        operator: () => op!,
        restart: async () => {
          await op!.kill();
          op = await startOperator(proxy, ns);
        },
        create: (name, spec) => client.create(MiniClusters, faultMiniCluster(ns, spec, name)),
        patch: (name, spec) => client.patch(MiniClusters, ns, name, { spec }, "merge"),
        converged: async (names) => {
          const t0 = Date.now();
          await eventually(async () => {
            for (const n of names) await assertConverged(client, ns, n);
          }, { timeoutMs: CONVERGE_AFTER_HEAL_MS, intervalMs: 250 });
          return Date.now() - t0;
        },
      };
      const detail = await scenario.run(ctx);
      // Fixpoint: a fresh operator (fresh lists, no faults) finds nothing to change. Both
      // snapshots are taken at a barrier (quiesce): the operator has reconciled every MiniCluster
      // with no retry pending, then wrote nothing for a while; so the fresh one's silence means it
      // looked and found nothing, not that it had not got round to looking.
      proxy.rules = [];
      proxy.watchFilter = undefined;
      await quiesce(client, proxy, op, ns);
      const before = await snapshot(client, ns);
      const writesBefore = proxy.writes;
      await ctx.restart();
      await quiesce(client, proxy, op, ns);
      const diff = describeDifference(before, await snapshot(client, ns));
      if (diff) throw new Error(`a fresh operator changed the converged state:\n${diff}`);
      const extra = proxy.requests.filter((r) => r.write && r.code && r.code < 300)
        .slice(writesBefore);
      assert.ok(
        extra.every((r) => r.resource === "events"),
        `a fresh operator wrote: ${extra.map((r) => `${r.method} ${r.path}`).join(", ")}`,
      );
      assertGuardedWrites(proxy.requests);
      return detail;
    } catch (e) {
      const writes = proxy.requests.filter((r) => r.write && r.resource !== "events")
        .map((r) => `${r.method} ${r.resource}/${r.name ?? ""} → ${r.code ?? "?"}`).slice(-15);
      const log = `\n--- last writes ---\n${writes.join("\n")}` +
        (op ? `\n--- operator log ---\n${op.logTail(25)}` : "");
      throw new Error(`${(e as Error).message}${log}`);
    } finally {
      await op?.kill();
      await proxy.close();
    }
  });
}

export async function runViewScenarios(
  client: KubeClient,
  kubeconfig: string,
  scenarios: ViewScenario[],
  concurrency: number,
): Promise<PlanResult[]> {
  return await pool(
    concurrency,
    scenarios.map((s) => async () => {
      const t0 = performance.now();
      try {
        const detail = await withViewEnv(client, kubeconfig, s);
        return {
          plan: `view ${s.name}`,
          ok: true,
          detail,
          seconds: (performance.now() - t0) / 1000,
        };
      } catch (e) {
        return {
          plan: `view ${s.name}`,
          ok: false,
          detail: (e as Error).message,
          seconds: (performance.now() - t0) / 1000,
        };
      }
    }),
  );
}
