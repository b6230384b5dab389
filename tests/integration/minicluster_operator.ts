/**
 * The MiniCluster operator run in-process for integration tests: the same wiring as mod.ts
 * (controllers/minicluster/controller.ts) on the runtime's watchers and controller, scoped to the
 * test's namespace, with a fresh client per operator whose requests are recorded, and a "kill
 * switch" that makes every further API request fail — the closest thing to SIGKILL between two
 * writes that a test can do in-process.
 */
import type { PodSecurityLevel } from "../../controllers/minicluster/policy/pod_security.ts";
import type { Event, Secret } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { KubeClient, type RequestEvent, type RequestOptions } from "../../runtime/client/client.ts";
import { type Action, Controller } from "../../runtime/controller/controller.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { loadKubeconfig } from "../../runtime/config/kubeconfig.ts";
import { silentLog } from "../../runtime/core/log.ts";
import { Events, type ResourceType, Secrets } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import type { KubeObject, Store } from "../../runtime/cache/store.ts";
import { Watcher } from "../../runtime/watch/watcher.ts";
import { BURST_PER_SECOND } from "../../runtime/pacing/burst_yield.ts";
import {
  miniClusterController,
  miniClusterStores,
  type WatchFn,
  type WatchSpec,
} from "../../controllers/minicluster/controller.ts";
import type { MiniClusterReconciler } from "../../controllers/minicluster/reconciler.ts";
import { curveSecretName, workspaceName } from "../../controllers/minicluster/children/names.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";
import { eventually, type TestEnv } from "../harness.ts";

const WRITE_VERBS = new Set(["create", "update", "patch", "apply", "delete", "deletecollection"]);

/** A client whose requests fail once `killed` is set (watches, already open, are left alone). */
class KillableClient extends KubeClient {
  killed = false;
  override request<T>(
    method: string,
    path: string,
    body?: unknown,
    opts?: RequestOptions,
  ): Promise<T> {
    if (this.killed) return Promise.reject(new Error("operator killed (test)"));
    return super.request<T>(method, path, body, opts);
  }
}

export interface InProcessOperator {
  client: KubeClient;
  reconciler: MiniClusterReconciler;
  /** Reconciles `mc` as given (a stored or a stale version), outside the queue, as a worker does. */
  reconcile(mc: MiniCluster): Promise<Action>;
  /** Every finished request of this operator's client, in order. */
  readonly requests: RequestEvent[];
  /** The write requests (create, update, patch, apply, delete). */
  writes(): RequestEvent[];
  /** Reconciles finished so far. */
  reconciles(): number;
  /** Resolves once the controller's workers run (caches synced). */
  started: Promise<void>;
  /** Stops the controller (draining the reconcile in flight), the watches and the client. */
  stop(): Promise<void>;
}

export interface OperatorOptions {
  /** Make every request after the n-th write fail, as if the process died right after it. */
  killAfterWrites?: number;
  cleanupTimeoutMs?: number;
  cleanupPollMs?: number;
  /** The operator's --pod-security level. */
  podSecurity?: PodSecurityLevel;
  /**
   * The operator's --max-writes-in-flight and --writes-in-flight-during-bursts, wired as mod.ts
   * wires them (`burstPerSecond` defaults to the operator's); without it the client has no bound
   * and nothing gives way.
   */
  writesInFlight?: { max: number; duringBursts: number; burstPerSecond?: number };
}

export async function startOperator(
  env: TestEnv,
  opts: OperatorOptions = {},
): Promise<InProcessOperator> {
  const requests: RequestEvent[] = [];
  let writes = 0;
  const kill = { client: undefined as KillableClient | undefined };
  const onRequest = (e: RequestEvent) => {
    requests.push(e);
    if (WRITE_VERBS.has(e.verb) && e.code >= 200 && e.code < 300) {
      writes++;
      if (opts.killAfterWrites !== undefined && writes >= opts.killAfterWrites) {
        client.killed = true;
      }
    }
  };
  const client = new KillableClient(await loadKubeconfig(env.kubeconfig), {
    onRequest,
    maxWritesInFlight: opts.writesInFlight?.max,
  });
  kill.client = client;

  const watchers: Watcher<KubeObject>[] = [];
  const watch: WatchFn = <T extends KubeObject>(
    rt: ResourceType,
    spec?: WatchSpec,
  ) => {
    // The same slim caches as the operator process (cache_view.ts), so the tests cover them.
    const w = new Watcher<KubeObject>(client, rt, {
      namespaces: [env.namespace],
      labelSelector: spec?.labelSelector,
      fieldSelector: spec?.fieldSelector,
      transform: spec?.transform,
      indexes: spec?.indexes,
      whereServed: spec?.whereServed,
    });
    watchers.push(w);
    w.start();
    return w.store as unknown as Store<T>;
  };
  const stores = miniClusterStores(watch);
  client.pacing.yieldToBursts(stores.miniClusters, {
    during: opts.writesInFlight?.duringBursts ?? 0,
    burstPerSecond: opts.writesInFlight?.burstPerSecond ?? BURST_PER_SECOND,
  });
  const definition = miniClusterController(client, stores, {
    cleanupTimeoutMs: opts.cleanupTimeoutMs,
    cleanupPollMs: opts.cleanupPollMs ?? 300,
    podSecurity: opts.podSecurity,
    instance: "integration-test",
  });
  let reconciles = 0;
  const controller = new Controller<MiniCluster>({
    ...definition,
    concurrency: 2,
    metrics: { reconciled: () => reconciles++ },
  });
  const started = controller.start();
  // As the manager does: the writes give way to bursts from the controller's start on.
  client.pacing.start();
  return {
    client,
    reconciler: definition.reconciler,
    reconcile: (mc) => {
      const { namespace = env.namespace, name = "" } = mc.metadata ?? {};
      return definition.reconciler.reconcile(mc, {
        key: `${namespace}/${name}`,
        namespace,
        name,
        retries: 0,
        signal: new AbortController().signal,
        log: silentLog,
      });
    },
    requests,
    writes: () => requests.filter((r) => WRITE_VERBS.has(r.verb)),
    reconciles: () => reconciles,
    started,
    async stop() {
      client.pacing.stop();
      await controller.stop();
      await Promise.all(watchers.map((w) => w.stop()));
      client.close();
    },
  };
}

/** Runs `fn` with an operator and always stops it. */
export async function withOperator<T>(
  env: TestEnv,
  fn: (op: InProcessOperator) => Promise<T>,
  opts: OperatorOptions = {},
): Promise<T> {
  const op = await startOperator(env, opts);
  try {
    await op.started;
    return await fn(op);
  } finally {
    await op.stop();
  }
}

/** A MiniCluster of one Flux container, `spec` merged in (testing/sample_minicluster.ts). */
export const miniCluster = sampleMiniCluster;

export async function getMiniCluster(env: TestEnv, name: string): Promise<MiniCluster> {
  return await env.client.get<MiniCluster>(MiniClusters, env.namespace, name);
}

/** The named condition of the MiniCluster as stored now (throws when it is absent). */
export async function condition(env: TestEnv, name: string, type: string) {
  const mc = await getMiniCluster(env, name);
  const c = mc.status?.conditions?.find((c) => c.type === type);
  if (!c) throw new Error(`MiniCluster ${name} has no ${type} condition yet`);
  return c;
}

/** Waits until condition `type` has `status` (and `reason` when given). */
export async function waitForCondition(
  env: TestEnv,
  name: string,
  type: string,
  status: string,
  reason?: string,
  timeoutMs = 30_000,
) {
  return await eventually(async () => {
    const c = await condition(env, name, type);
    if (c.status !== status || (reason && c.reason !== reason)) {
      throw new Error(
        `${type} is ${c.status}/${c.reason} (${c.message}), want ${status}/${reason ?? "*"}`,
      );
    }
    return c;
  }, { timeoutMs, intervalMs: 200 });
}

/** Events about the MiniCluster `name`. */
export async function eventsFor(env: TestEnv, name: string): Promise<Event[]> {
  const list = await env.client.list<Event>(Events, {
    namespace: env.namespace,
    fieldSelector: `involvedObject.name=${name},involvedObject.kind=MiniCluster`,
  });
  return list.items;
}

/** Whether the test namespace holds an object of kind `rt` named `name` now. */
export async function exists(env: TestEnv, rt: ResourceType, name: string): Promise<boolean> {
  try {
    await env.client.get(rt, env.namespace, name);
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

export async function curveSecret(env: TestEnv, mc: MiniCluster): Promise<Secret> {
  return await env.client.get<Secret>(Secrets, env.namespace, curveSecretName(mc));
}

export async function workspace(env: TestEnv, mc: MiniCluster): Promise<MiniClusterWorkspace> {
  return await env.client.get<MiniClusterWorkspace>(
    MiniClusterWorkspaces,
    env.namespace,
    workspaceName(mc),
  );
}

/** Waits until the operator has made no write for `quietMs`; returns its write count. */
export async function quiescent(op: InProcessOperator, quietMs = 2_000): Promise<number> {
  let last = op.writes().length;
  let since = Date.now();
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    const now = op.writes().length;
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return now;
    }
  }
}
