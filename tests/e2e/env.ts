// The e2e environment: a FULL local cluster (controller manager, scheduler, KWOK nodes), a fresh
// namespace per scenario and the operator as a separate process scoped to that namespace.
//
// Which cluster, first match wins: $MC_KUBECONFIG (set by `deno task test`); a healthy full cluster
// in .cluster/ (`deno task cluster up`); else one started for this test process in a temporary
// directory and stopped when the process unloads (testing/private_cluster.ts), so
// `deno task test:e2e` works on a clean clone.

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { isAlreadyExists, isNotFound } from "../../runtime/client/errors.ts";
import {
  ConfigMaps,
  Events,
  Jobs,
  Namespaces,
  Pods,
  Secrets,
  ServiceAccounts,
  Services,
} from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MINICLUSTER_LABEL } from "../../controllers/minicluster/children/names.ts";
import { status } from "../../hack/cluster/lifecycle.ts";
import { installCrds } from "../../testing/crds.ts";
import { startPrivateCluster } from "../../testing/private_cluster.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";
import { eventually, type TestEnv, testNamespaceName, withTimeout } from "../harness.ts";
import { OperatorProcess } from "../../testing/operator_process.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const E2E_PREFIX = "minicluster-e2e-";

// tests/real/env.ts installs the CRDs through this module.
export { installCrds };

let cluster: Promise<string> | undefined;

/** The kubeconfig of a full cluster with the CRDs installed (memoized per process). */
function fullClusterKubeconfig(): Promise<string> {
  return cluster ??= (async () => {
    const kubeconfig = await findOrStartFullCluster();
    await installCrds(kubeconfig);
    return kubeconfig;
  })();
}

async function findOrStartFullCluster(): Promise<string> {
  const fromEnv = Deno.env.get("MC_KUBECONFIG");
  if (fromEnv) return fromEnv;
  const dev = await status(join(ROOT, ".cluster")).catch(() => undefined);
  if (dev?.healthy && dev.mode === "full" && dev.kubeconfig) return dev.kubeconfig;
  return await startPrivateCluster({ prefix: E2E_PREFIX, nodes: 4 });
}

/** What a scenario gets: the harness's TestEnv plus its operator processes. */
export interface E2EEnv extends TestEnv {
  /**
   * Starts the operator scoped to this namespace; resolves once its caches synced. `root`: the
   * checkout whose mod.ts runs (default this one), e.g. a previous release's.
   */
  startOperator(opts?: { args?: string[]; root?: string }): Promise<OperatorProcess>;
  /** SIGKILLs `op` and starts a fresh one with the same flags; resolves once it synced. */
  restartOperator(op: OperatorProcess): Promise<OperatorProcess>;
}

/**
 * Registers a scenario: a fresh namespace on the full cluster, torn down even on failure. Teardown
 * kills the scenario's operators and strips our finalizer from what is left, so a failed scenario
 * never leaves a namespace stuck in Terminating on a reused cluster.
 */
export function e2eTest(
  name: string,
  fn: (env: E2EEnv) => Promise<void>,
  opts: { timeoutMs?: number; ignore?: boolean } = {},
): void {
  Deno.test({
    name,
    ignore: opts.ignore,
    async fn() {
      const kubeconfig = await fullClusterKubeconfig();
      const client = await KubeClient.fromKubeconfig(kubeconfig);
      const namespace = testNamespaceName(name);
      const operators: OperatorProcess[] = [];
      const env: E2EEnv = {
        client,
        namespace,
        kubeconfig,
        async startOperator(o = {}) {
          const op = await OperatorProcess.start({
            kubeconfig,
            namespaces: [namespace],
            args: o.args,
            root: o.root,
            echo: Deno.env.get("MC_E2E_ECHO") === "1",
          });
          operators.push(op);
          await op.ready();
          return op;
        },
        async restartOperator(op) {
          await op.kill();
          const next = await OperatorProcess.start(op.opts);
          operators.push(next);
          await next.ready();
          return next;
        },
      };
      let failed = true;
      try {
        await client.create(Namespaces, {
          metadata: { name: namespace, labels: { "minicluster.flux-framework.org/test": "e2e" } },
        });
        await client.create(ServiceAccounts, { metadata: { name: "default", namespace } })
          .catch((e) => {
            if (!isAlreadyExists(e)) throw e;
          });
        await withTimeout(fn(env), opts.timeoutMs ?? 90_000, name);
        failed = false;
      } finally {
        if (failed) {
          for (const op of operators) {
            console.error(`--- operator ${op.pid} log (last lines)\n${op.logTail(25)}`);
          }
        }
        for (const op of operators) await op.kill();
        await releaseMiniClusters(client, namespace);
        await client.delete(Namespaces, undefined, namespace).catch((e) => {
          if (!isNotFound(e)) throw e;
        });
        client.close();
      }
    },
  });
}

async function releaseMiniClusters(client: KubeClient, namespace: string): Promise<void> {
  const list = await client.list<MiniCluster>(MiniClusters, { namespace }).catch(() => undefined);
  for (const mc of list?.items ?? []) {
    if (!mc.metadata?.finalizers?.length) continue;
    await client.patch(MiniClusters, namespace, mc.metadata.name!, {
      metadata: { finalizers: null },
    }, "merge").catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// Reading the cluster.

/** A MiniCluster of one Flux container, `spec` merged in (testing/sample_minicluster.ts). */
export const miniCluster = sampleMiniCluster;

/** Pod annotations that keep a Job's pods Running on KWOK (see hack/cluster/kwok_stages.ts). */
export const KEEP_RUNNING = { "kwok.x-k8s.io/keep-running": "true" };

export async function getMiniCluster(env: TestEnv, name: string): Promise<MiniCluster> {
  return await env.client.get<MiniCluster>(MiniClusters, env.namespace, name);
}

export function conditionOf(mc: MiniCluster, type: string): Condition | undefined {
  const conditions = (mc.status as { conditions?: Condition[] } | undefined)?.conditions;
  return conditions?.find((c) => c.type === type);
}

/** Waits until the condition has `status` (and `reason`, when given); resolves the MiniCluster. */
export async function waitForCondition(
  env: TestEnv,
  name: string,
  type: string,
  want: { status: "True" | "False"; reason?: string },
  timeoutMs = 45_000,
): Promise<MiniCluster> {
  return await eventually(async () => {
    const mc = await getMiniCluster(env, name);
    const c = conditionOf(mc, type);
    if (!c || c.status !== want.status || (want.reason && c.reason !== want.reason)) {
      throw new Error(
        `${name}: ${type} is ${c?.status}/${c?.reason} (${c?.message}), want ${want.status}/${
          want.reason ?? "*"
        }`,
      );
    }
    return mc;
  }, { timeoutMs, intervalMs: 250 });
}

/** Pods of the MiniCluster's Job (by the operator's MiniCluster label). */
export async function podsOf(env: TestEnv, name: string): Promise<Pod[]> {
  const list = await env.client.list<Pod>(Pods, {
    namespace: env.namespace,
    labelSelector: `${MINICLUSTER_LABEL}=${name}`,
  });
  return list.items;
}

/** Pods that are Running and Ready, on a KWOK node, and not being deleted. */
function runningOnKwok(pods: readonly Pod[]): Pod[] {
  return pods.filter((p) =>
    !p.metadata?.deletionTimestamp &&
    p.status?.phase === "Running" &&
    (p.spec?.nodeName ?? "").startsWith("kwok-node-") &&
    p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True")
  );
}

/** Waits until exactly `count` pods of the MiniCluster run on KWOK nodes and no other is active. */
export async function waitForRunningPods(
  env: TestEnv,
  name: string,
  count: number,
  timeoutMs = 45_000,
): Promise<Pod[]> {
  return await eventually(async () => {
    const pods = await podsOf(env, name);
    const running = runningOnKwok(pods);
    const active = pods.filter((p) =>
      !p.metadata?.deletionTimestamp &&
      p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed"
    );
    if (running.length !== count || active.length !== count) {
      throw new Error(
        `${name}: ${running.length} running of ${active.length} active pods, want ${count}`,
      );
    }
    return running;
  }, { timeoutMs, intervalMs: 250 });
}

export async function jobOf(env: TestEnv, name: string): Promise<Job> {
  return await env.client.get<Job>(Jobs, env.namespace, name);
}

/** Events about the MiniCluster `name`, oldest first. */
export async function eventsOf(env: TestEnv, name: string): Promise<Event[]> {
  const list = await env.client.list<Event>(Events, {
    namespace: env.namespace,
    fieldSelector: `involvedObject.name=${name},involvedObject.kind=MiniCluster`,
  });
  return list.items.sort((a, b) =>
    (a.metadata?.creationTimestamp ?? "").localeCompare(b.metadata?.creationTimestamp ?? "")
  );
}

/**
 * Everything of the namespace that a MiniCluster could have left: Jobs, pods, Services, Secrets and
 * ConfigMaps (but the kube-root-ca.crt every namespace gets), as "Kind/name".
 */
export async function leftovers(env: TestEnv): Promise<string[]> {
  const ns = { namespace: env.namespace };
  const names = async (rt: typeof Jobs, kind: string, skip: string[] = []) =>
    (await env.client.list<{ metadata?: { name?: string } }>(rt, ns)).items
      .map((o) => o.metadata?.name ?? "")
      .filter((n) => !skip.includes(n))
      .map((n) => `${kind}/${n}`);
  return [
    ...await names(Jobs, "Job"),
    ...await names(Pods, "Pod"),
    ...await names(Services, "Service"),
    ...await names(Secrets, "Secret"),
    ...await names(ConfigMaps, "ConfigMap", ["kube-root-ca.crt"]),
    ...(await env.client.list<MiniCluster>(MiniClusters, ns)).items.map((m) =>
      `MiniCluster/${m.metadata?.name}`
    ),
  ];
}

export { eventually };

/**
 * `read()`'s value once two reads `holdMs` apart agree (deeply), for state that other controllers
 * write on their own time; throws after `timeoutMs`.
 */
export async function heldStill<T>(
  read: () => Promise<T>,
  what: string,
  opts: { holdMs?: number; timeoutMs?: number } = {},
): Promise<T> {
  const holdMs = opts.holdMs ?? 3_000;
  return await eventually(async () => {
    const first = await read();
    await new Promise((r) => setTimeout(r, holdMs));
    assert.deepEqual(await read(), first, `${what} still moving`);
    return first;
  }, { timeoutMs: opts.timeoutMs ?? 60_000, intervalMs: 0 });
}
