/**
 * Shared plumbing of the fault tests: a throwaway namespace per plan, the operator as a separate
 * process behind a fault proxy, waiting for quiet, and the counts the suite prints.
 */
import assert from "node:assert/strict";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { isAlreadyExists, isNotFound } from "../../runtime/client/errors.ts";
import {
  ConfigMaps,
  Jobs,
  Namespaces,
  Secrets,
  ServiceAccounts,
  Services,
} from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
} from "../../controllers/minicluster/children/names.ts";
import { testNamespaceName } from "../harness.ts";
import { OperatorProcess } from "../../testing/operator_process.ts";
import type { FaultProxy } from "./proxy.ts";
import { LONGEST_DELIBERATE_PAUSE_MS } from "../../controllers/minicluster/timing.ts";

/** FAULTS_ECHO=1: the operators' logs on stderr. */
const ECHO = ["1", "true"].includes(Deno.env.get("FAULTS_ECHO") ?? "");

/**
 * The seed of every random choice the fault suites make (which watch events are dropped, which
 * requests fail): FAULTS_SEED, else a fixed one, so that a run repeats; printed with every summary.
 */
export const SEED = seedOf(Deno.env.get("FAULTS_SEED"));

function seedOf(text: string | undefined): number {
  if (text === undefined || text === "") return 1;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`FAULTS_SEED=${text}: not an integer ≥ 0`);
  return n >>> 0;
}

/**
 * A random stream in [0, 1) of its own for `label` (a plan's name), from SEED: plans running
 * side by side do not take numbers from each other's stream. mulberry32 over an FNV-1a hash.
 */
export function randomFor(label: string, seed = SEED): () => number {
  let h = 0x811c9dc5;
  for (const ch of `${seed}:${label}`) h = Math.imul(h ^ ch.codePointAt(0)!, 0x01000193);
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Runs `fn` in a fresh namespace, deleted afterwards (also on failure). */
export async function withNamespace<T>(
  client: KubeClient,
  label: string,
  fn: (namespace: string) => Promise<T>,
): Promise<T> {
  const namespace = testNamespaceName(label);
  await client.create(Namespaces, {
    metadata: { name: namespace, labels: { "minicluster.flux-framework.org/test": "true" } },
  });
  await client.create(ServiceAccounts, { metadata: { name: "default", namespace } }).catch((e) => {
    if (!isAlreadyExists(e)) throw e;
  });
  try {
    return await fn(namespace);
  } finally {
    await removeFinalizers(client, namespace).catch(() => {});
    await client.delete(Namespaces, undefined, namespace).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  }
}

/** Without a running operator a MiniCluster's finalizer would block the namespace forever. */
async function removeFinalizers(client: KubeClient, namespace: string): Promise<void> {
  const list = await client.list<{ metadata: ObjectMeta }>(MiniClusters, { namespace });
  for (const mc of list.items) {
    if (!mc.metadata.finalizers?.length) continue;
    await client.patch(MiniClusters, namespace, mc.metadata.name!, {
      metadata: { finalizers: null },
    }, "merge").catch(() => {});
  }
}

/** The operator process, watching one namespace, talking to the API through `proxy`. */
export async function startOperator(
  proxy: FaultProxy,
  namespace: string,
  args: string[] = [],
): Promise<OperatorProcess> {
  const kubeconfig = await proxy.writeKubeconfig();
  const op = await OperatorProcess.start({
    kubeconfig,
    namespaces: [namespace],
    args: ["--log-level=debug", ...args],
    echo: ECHO,
  });
  await op.ready(60_000);
  return op;
}

/**
 * Long enough a silence to call the operator settled: the 1.5 s this suite always allowed, plus the
 * longest delay the operator takes on purpose before a write (timing.ts: batched events, a new
 * Job's first status), so that a pod turning Ready just before the silence began still has its
 * status written inside it.
 */
const QUIET_MS = 1_500 + LONGEST_DELIBERATE_PAUSE_MS;

/** Waits until no write (but Lease renewals) went through the proxy for `quietMs`. */
export async function settle(
  proxy: FaultProxy,
  quietMs = QUIET_MS,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // Lease renewals are a leader's heartbeat, not work.
  const work = () =>
    proxy.requests.filter((r) => r.write && r.response !== undefined && r.resource !== "leases")
      .length;
  let last = work();
  let since = Date.now();
  while (Date.now() < deadline) {
    await sleep(100);
    if (work() !== last) {
      last = work();
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return;
  }
  throw new Error(`the operator kept writing for ${timeoutMs} ms`);
}

/**
 * Which MiniClusters of `namespace` `op` has not yet finished with: none of its reconciles of the
 * key ended yet (it has not acted on the MiniCluster at all), or its last one is still running or
 * failed (a retry is pending, which may write when its backoff ends), or it is being deleted (the
 * finalizer is still to go). Read from the operator's debug log (startOperator runs it with
 * --log-level=debug).
 */
async function unfinished(
  client: KubeClient,
  op: OperatorProcess,
  namespace: string,
): Promise<string[]> {
  const last = new Map<string, string>();
  for (const r of op.logRecords()) {
    if (r.controller !== "minicluster" || typeof r.key !== "string") continue;
    if (["reconciling", "reconciled", "reconcile failed; retrying"].includes(String(r.msg))) {
      last.set(r.key, String(r.msg));
    }
  }
  const list = await client.list<{ metadata: ObjectMeta }>(MiniClusters, { namespace });
  return list.items.flatMap((mc) => {
    const key = `${namespace}/${mc.metadata.name}`;
    // One being deleted still owes the removal of its finalizer, which the cleanup does after
    // polls that write nothing (waiting for the pods to go): no silence shows it is done.
    if (mc.metadata.deletionTimestamp) return [`${key} (being deleted)`];
    return last.get(key) === "reconciled"
      ? []
      : [`${key} (${last.get(key) ?? "never reconciled"})`];
  });
}

/**
 * The barrier before a "nothing happens" check: `op` has reconciled every MiniCluster of the
 * namespace since it started, the last reconcile of each ended without a retry pending, and then
 * no write went through the proxy for `quietMs` (and still none of them is unfinished). A silence
 * alone proves nothing on a loaded machine: the operator may not have got to the change yet.
 * Every watch stream must be open too: one still reconnecting after an outage (behind its
 * backoff) leaves a stale view that a fresh operator would not have.
 */
export async function quiesce(
  client: KubeClient,
  proxy: FaultProxy,
  op: OperatorProcess,
  namespace: string,
  quietMs = QUIET_MS,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending: string[] = [];
  const behind = async () => [
    ...await unfinished(client, op, namespace),
    ...proxy.unwatched().map((s) => `no watch open on ${s}`),
  ];
  while (Date.now() < deadline) {
    pending = await behind();
    if (pending.length === 0) {
      await settle(proxy, quietMs, Math.max(1, deadline - Date.now()));
      pending = await behind();
      if (pending.length === 0) return;
    }
    await sleep(200);
  }
  throw new Error(`the operator did not finish within ${timeoutMs} ms: ${pending.join(", ")}`);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** kind/name → uid of the MiniClusters and of everything the operator labelled as its own. */
export async function uidsOf(client: KubeClient, namespace: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const rt of [MiniClusters, MiniClusterWorkspaces, ConfigMaps, Secrets, Services, Jobs]) {
    const list = await client.list<{ metadata: ObjectMeta }>(rt, {
      namespace,
      labelSelector: rt === MiniClusters ? undefined : `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`,
    });
    for (const o of list.items) {
      if (!o.metadata.deletionTimestamp) out.set(`${rt.kind}/${o.metadata.name}`, o.metadata.uid!);
    }
  }
  return out;
}

/**
 * Oracles on the proxy's request log that hold for every plan: the operator deletes only with a
 * uid precondition (never a newer object of the same name), and edits finalizers only with the
 * resourceVersion they were computed from.
 */
export function assertGuardedWrites(
  requests: { method: string; resource: string; body?: string; path: string; code?: number }[],
): void {
  for (const r of requests) {
    if (r.method === "DELETE" && r.resource !== "leases") {
      const body = JSON.parse(r.body || "{}");
      assert.ok(body.preconditions?.uid, `DELETE ${r.path} without a uid precondition`);
    }
    if (r.method === "PATCH" && r.body?.includes('"finalizers"')) {
      const body = JSON.parse(r.body);
      assert.ok(
        body.metadata?.resourceVersion,
        `finalizer patch of ${r.path} without a resourceVersion`,
      );
    }
  }
}

/** One plan's outcome, as printed in the summary. */
export interface PlanResult {
  plan: string;
  ok: boolean;
  detail: string;
  seconds: number;
}

/** Prints the table and the counts line the issue asks the suite to report. */
export function printSummary(suite: string, results: PlanResult[]): void {
  const failed = results.filter((r) => !r.ok);
  const lines = [`\n[faults] ${suite}`];
  for (const r of results) {
    lines.push(
      `  ${r.ok ? "ok    " : "FAILED"} ${r.plan} (${r.seconds.toFixed(1)} s)${
        r.detail ? ` — ${r.detail.split("\n")[0]}` : ""
      }`,
    );
  }
  lines.push(
    `[faults] ${suite}: ${results.length} plans run, ${failed.length} failures ` +
      `(seed ${SEED}; FAULTS_SEED=${SEED} repeats it)`,
  );
  console.log(lines.join("\n"));
}

/** Runs `tasks` with at most `limit` at once, in order of start. */
export async function pool<T>(limit: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return out;
}
