/**
 * One operator's run of the comparison: its CRD installed, a fresh namespace, the operator
 * started, N MiniClusters created at once and followed to every child and every pod Ready, its
 * requests counted from the audit log, then an idle window, then the namespace removed so that
 * the next contender starts on an empty cluster (the Go operator reconciles every namespace).
 */
import { MiniClusters } from "../../api/resource.ts";
import { installCrd } from "../../hack/conformance/run.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { Namespaces } from "../../runtime/client/resources.ts";
import type { KubeObject } from "../../runtime/cache/store.ts";
import { join } from "node:path";
import type { CpuProfile } from "../../testing/cpu_profile.ts";
import { readCpuSeconds } from "../../testing/operator_process.ts";
import { formatProfileSummary, summarizeProfile } from "../profile_summary.ts";
import { benchMiniCluster, createNamespace, pool } from "../cluster_state.ts";
import { summarize, type Summary } from "../stats.ts";
import { type ApfCounts, apfDelta, type ApfReader } from "./apf.ts";
import { type AuditLog, type Counts, total, writes } from "./audit.ts";
import type { Contender, ContenderName } from "./contenders.ts";
import { PeerObserver } from "./observer.ts";

const say = (msg: string) => console.error(`[bench --peer] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The wait for every pod Ready gives up when no MiniCluster got Ready for this long. Pods are run
 * by KWOK, the same for both operators; at 10,000 it stopped for minutes at a time (once for 18)
 * when its pod watch fell behind and the apiserver cut it. Every measure but the Ready times is
 * still the operator's.
 */
const READY_STALL_MS = 300_000;

/** Writes stopped for this long end a run's work (then the idle window starts). */
const QUIET_MS = 5000;
const QUIET_LIMIT_MS = 300_000;

export interface PeerRun {
  operator: ContenderName;
  miniClusters: number;
  size: number;
  /** Position in the invocation's order (alternates across repetitions). */
  order: number;
  /** From the first create to the last create returning: the user's own requests. */
  createsMs: number;
  /** The operator's requests while the user's creates were being made: what they competed with. */
  duringCreates: Counts;
  allChildrenMs: number;
  /** NaN when Ready stalled short of N (see `READY_STALL_MS`). */
  allReadyMs: number;
  /** MiniClusters with every pod Ready when the wait ended. */
  readyMiniClusters: number;
  childrenMs: Summary;
  readyMs: Summary;
  /** From the first create until the operator has written nothing for 5 s after every pod Ready. */
  requests: Counts;
  requestsPerMiniCluster: number;
  writesPerMiniCluster: number;
  cpuSeconds: number;
  /** The apiserver's and etcd's CPU over the same span: what the run cost the control plane. */
  controlPlaneCpuSeconds: number;
  rssEndBytes: number;
  /** API Priority and Fairness over the same span, every client's: dispatched, seconds queued. */
  apf: ApfCounts;
  idle: { windowMs: number; requests: Counts; rssBytes: number; cpuSeconds: number };
}

export interface PeerContext {
  /** Admin kubeconfig (the bench's own client, the observer). */
  kubeconfig: string;
  /** Each contender's own kubeconfig (its audit user). */
  kubeconfigs: Record<ContenderName, string>;
  audit: AuditLog;
  logDir: string;
  size: number;
  createConcurrency: number;
  idleMs: number;
  /** kube-apiserver and etcd. */
  controlPlanePids: number[];
  apf: ApfReader;
  /**
   * Starts KWOK afresh before each run, so that the previous run's pods (their deletions, up to
   * 10,000 of them, each a failed delete stage in KWOK's queue) are not still being worked through
   * when the next run's pods arrive: every run gets the same KWOK.
   */
  restartKwok: () => Promise<void>;
  /** Where each profiled run's `.cpuprofile` and its summary go (`--cpu-profile`). */
  profileOut?: string;
}

function controlPlaneCpu(ctx: PeerContext): number {
  return ctx.controlPlanePids.reduce((a, pid) => a + readCpuSeconds(pid), 0);
}

/** The profile, its summary, and the operator's /metrics at the end of the profiled span. */
async function saveProfile(
  out: string,
  name: string,
  profile: CpuProfile,
  metrics?: string,
): Promise<void> {
  await Deno.mkdir(out, { recursive: true });
  const base = join(out, `${new Date().toISOString().slice(0, 10)}-peer-profile-${name}`);
  await Deno.writeTextFile(`${base}.cpuprofile`, JSON.stringify(profile));
  if (metrics) await Deno.writeTextFile(`${base}.metrics.txt`, metrics);
  await Deno.writeTextFile(
    `${base}.profile.txt`,
    formatProfileSummary(summarizeProfile(profile)) + "\n",
  );
  say(`wrote ${base}.cpuprofile and .profile.txt`);
}

function names(n: number): string[] {
  const width = String(n).length;
  return Array.from({ length: n }, (_, i) => `mc-${String(i).padStart(width, "0")}`);
}

export async function peerRun(
  ctx: PeerContext,
  c: Contender,
  n: number,
  order: number,
  last = false,
): Promise<PeerRun> {
  await ctx.restartKwok();
  const client = await KubeClient.fromKubeconfig(ctx.kubeconfig);
  try {
    for (const crd of [c.crd].flat()) await installCrd(client, crd);
    const ns = `peer-${c.name}-n${n}-${crypto.randomUUID().slice(0, 6)}`;
    await createNamespace(client, ns);
    say(`${c.name} N=${n}: namespace ${ns}; starting the operator`);
    const op = await c.start(ctx.kubeconfigs[c.name], ns, ctx.logDir);
    let stopped = false;
    try {
      const observer = await PeerObserver.open(
        ctx.kubeconfig,
        ns,
        c.children,
        ctx.size,
        c.childKinds,
      );
      const created = new Map<string, number>();
      const all = names(n);
      let done: Pick<
        PeerRun,
        "allChildrenMs" | "allReadyMs" | "readyMiniClusters" | "createsMs" | "duringCreates"
      >;
      const profiler = ctx.profileOut && op.profiler ? await op.profiler() : undefined;
      await profiler?.start();
      const a0 = ctx.audit.mark();
      const cpu0 = op.cpuSeconds();
      const cp0 = controlPlaneCpu(ctx);
      const apf0 = await ctx.apf.read();
      const t0 = performance.now();
      const timer = setInterval(() => {
        say(
          `  ${c.name}: children ${observer.childrenAt.size}/${n}, Ready ${observer.readyAt.size}/${n}`,
        );
      }, 15_000);
      try {
        await pool(all, ctx.createConcurrency, async (name) => {
          await client.create(MiniClusters, benchMiniCluster(name, ns, ctx.size));
          created.set(name, performance.now());
        });
        const createsMs = performance.now() - t0;
        const duringCreates = await ctx.audit.since(a0, c.user);
        say(`${c.name} N=${n}: creates returned in ${(createsMs / 1000).toFixed(1)} s`);
        await observer.until(
          () => observer.childrenAt.size >= n,
          60_000 + n * 900,
          () => `${observer.childrenAt.size}/${n} MiniClusters have every child`,
        );
        const allChildrenMs = Math.max(...observer.childrenAt.values()) - t0;
        say(`${c.name} N=${n}: every child in ${(allChildrenMs / 1000).toFixed(1)} s`);
        const allReady = await observer.untilOrStalled(
          () => observer.readyAt.size >= n,
          () => observer.readyAt.size,
          READY_STALL_MS,
        );
        const allReadyMs = allReady ? Math.max(...observer.readyAt.values()) - t0 : NaN;
        say(
          allReady
            ? `${c.name} N=${n}: every pod Ready in ${(allReadyMs / 1000).toFixed(1)} s`
            : `${c.name} N=${n}: no MiniCluster got Ready for ${READY_STALL_MS / 1000} s; ` +
              `${observer.readyAt.size}/${n} Ready; going on without a Ready time`,
        );
        done = {
          allChildrenMs,
          allReadyMs,
          readyMiniClusters: observer.readyAt.size,
          createsMs,
          duringCreates,
        };
      } finally {
        clearInterval(timer);
        await observer.stop();
      }
      await sleep(1000);
      const cpu1 = op.cpuSeconds();
      const cp1 = controlPlaneCpu(ctx);
      if (profiler) {
        await saveProfile(
          ctx.profileOut!,
          `${c.name}-size${ctx.size}-n${n}`,
          await profiler.stop(),
          await op.metricsText?.(),
        );
        profiler.close();
      }
      const apf = apfDelta(apf0, await ctx.apf.read());
      const rssEndBytes = op.rssBytes();
      // The status writes and Events of the last MiniClusters to get Ready can trail their pods
      // (at 10,000, by more than a minute): they are the run's work, not idleness.
      await untilNoWrites(ctx.audit, c.user);
      const requests = await ctx.audit.since(a0, c.user);
      const a1 = ctx.audit.mark();
      say(`${c.name} N=${n}: idle window of ${ctx.idleMs / 1000} s`);
      const i0 = performance.now();
      await sleep(ctx.idleMs);
      const idle = {
        windowMs: performance.now() - i0,
        requests: await ctx.audit.since(a1, c.user),
        rssBytes: op.rssBytes(),
        cpuSeconds: op.cpuSeconds() - cpu1,
      };
      const childrenMs = all.map((x) => observer.childrenAt.get(x)! - created.get(x)!);
      const readyMs = all.map((x) => observer.readyAt.get(x)! - created.get(x)!);
      // Stopped first: the Go operator must not see the next run's MiniClusters, and the
      // deletions below are the bench's, not a cost of either operator.
      await op.stop();
      stopped = true;
      // The invocation's last run leaves its namespace to the cluster's teardown: at 10,000 the
      // namespace controller takes many minutes to empty it, and no run follows.
      if (!last) {
        await removeNamespace(client, ns, n).catch((e) =>
          say(`removing namespace ${ns}: ${e}; going on`)
        );
      }
      return {
        operator: c.name,
        miniClusters: n,
        size: ctx.size,
        order,
        ...done,
        childrenMs: summarize(childrenMs),
        readyMs: summarize(readyMs),
        requests,
        requestsPerMiniCluster: total(requests) / n,
        writesPerMiniCluster: writes(requests) / n,
        cpuSeconds: cpu1 - cpu0,
        controlPlaneCpuSeconds: cp1 - cp0,
        apf,
        rssEndBytes,
        idle,
      };
    } catch (e) {
      say(`${c.name} log tail:\n${op.logTail()}`);
      throw e;
    } finally {
      if (!stopped) await op.stop();
    }
  } finally {
    client.close();
  }
}

/** Waits until `user` has written nothing for `QUIET_MS` (at most `QUIET_LIMIT_MS`). */
async function untilNoWrites(audit: AuditLog, user: string): Promise<void> {
  const limit = performance.now() + QUIET_LIMIT_MS;
  while (performance.now() < limit) {
    const mark = audit.mark();
    await sleep(QUIET_MS);
    if (writes(await audit.since(mark, user)) === 0) return;
  }
  say(`${user} still writing after ${QUIET_LIMIT_MS / 1000} s; the idle window starts anyway`);
}

/**
 * Deletes the namespace and waits until it is gone (its pods too), so the next run starts quiet.
 * The operator is stopped by then, so the MiniClusters' finalizers (ours waits for the pods to be
 * gone) are removed here.
 */
async function removeNamespace(client: KubeClient, ns: string, n: number): Promise<void> {
  const t0 = performance.now();
  await client.delete(Namespaces, undefined, ns);
  const mcs = await client.listAll<KubeObject>(MiniClusters, { namespace: ns });
  await pool(mcs.items.filter((m) => m.metadata?.finalizers?.length), 8, async (m) => {
    await client.patch(MiniClusters, ns, m.metadata!.name!, {
      metadata: { finalizers: null },
    }, "merge").catch(() => {});
  });
  // A terminating namespace gets no new pods; removing its pods at once (no grace: KWOK runs
  // nothing) spares the next run minutes of graceful deletions in the background.
  await client.request(
    "DELETE",
    `/api/v1/namespaces/${ns}/pods`,
    { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0 },
    { verb: "deletecollection", resource: "pods", timeoutMs: 600_000 },
  ).catch((e) => say(`deleting the pods of ${ns}: ${e}; going on`));
  const deadline = Date.now() + 120_000 + n * 300;
  for (;;) {
    try {
      await client.get(Namespaces, undefined, ns);
    } catch {
      break;
    }
    if (Date.now() > deadline) {
      say(`namespace ${ns} still terminating; going on`);
      return;
    }
    await sleep(1000);
  }
  say(`namespace ${ns} removed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
