// deno task bench — how fast and how cheaply the operator works, on the local KWOK cluster.
//
//   deno task bench [--n=100,1000] [--size=4] [--concurrency=4] [--idle-seconds=60] [--rss-10k]
//                   [--kubeconfig=PATH] [--out=bench/results] [--echo] [--peer [--reps=R]]
//
// Without --kubeconfig it starts a private full cluster (etcd, apiserver, controller manager,
// scheduler, KWOK) in a temporary directory and removes it at the end. For every N: a fresh
// namespace, a fresh operator process scoped to it, N MiniClusters created at once and followed to
// "all children exist" and to Ready; the operator's own /metrics for requests by verb; then the same
// run by a raw client instead of the operator (bench/raw_client.ts). At the largest N: an idle
// window (writes and reconciles per minute, CPU) and a restart (start-up to caches synced, writes
// after restart). Prints a table, writes bench/results/<date>.json and two SVG plots.

import { join } from "node:path";
import type { MiniCluster } from "../api/mod.ts";
import { KubeClient } from "../runtime/client/client.ts";
import { MiniClusters } from "../api/resource.ts";
import type { ResourceType } from "../runtime/client/resources.ts";
import { installCrds } from "../testing/crds.ts";
import { startPrivateCluster } from "../testing/private_cluster.ts";
import { diffCounts, groupBy, READ_VERBS, writeCount } from "../testing/metrics_text.ts";
import { OperatorProcess } from "../testing/operator_process.ts";
import {
  benchMiniCluster,
  countPods,
  createNamespace,
  ensureNodes,
  pool,
  waitPodsReady,
} from "./cluster_state.ts";
import { type Flags, flags, pacingArgs } from "./flags.ts";
import { CreationObserver } from "./observer.ts";
import {
  cpuOver,
  minimumWrites,
  reconcileState,
  waitInitialReconciles,
  writesKeyed,
} from "./operator_readings.ts";
import { childObjects, rawCreates } from "./raw_client.ts";
import {
  type BenchResults,
  checkTargets,
  formatReport,
  type IdleRun,
  latencyPlot,
  memoryPlot,
  type ResourcePoint,
  type ScaleRun,
  toJson,
} from "./report.ts";
import { perMinute, ratio, summarize } from "./stats.ts";
import { peerMain } from "./peer/main.ts";
import { realNodesBench } from "./real/nodes.ts";
import { fluxAloneBench } from "./real/flux_alone.ts";
import { inClusterMemoryBench } from "./in_cluster_memory.ts";
import { startupBench } from "./startup.ts";

const say = (msg: string) => console.error(`[bench] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Pods per fake node we plan for (they allow 110). */
const PODS_PER_NODE = 100;

function names(n: number): string[] {
  const width = String(n).length;
  return Array.from({ length: n }, (_, i) => `mc-${String(i).padStart(width, "0")}`);
}

function progress(observer: CreationObserver, n: number): () => void {
  const timer = setInterval(() => {
    say(
      `  children complete ${observer.childrenAt.size}/${n}, Ready ${observer.readyAt.size}/${n}`,
    );
  }, 10_000);
  return () => clearInterval(timer);
}

interface Context {
  client: KubeClient;
  kubeconfig: string;
  f: Flags;
  childrenPerMiniCluster: number;
  /** The kinds of those children, in the order of the table of child kinds. */
  childKinds: ResourceType[];
}

async function scaleRun(ctx: Context, n: number, first: boolean) {
  const { client, kubeconfig, f } = ctx;
  const ns = `bench-n${n}-${crypto.randomUUID().slice(0, 6)}`;
  await createNamespace(client, ns);
  say(`N=${n}: namespace ${ns}; starting the operator (--concurrency=${f.concurrency})`);
  const op = await OperatorProcess.start({
    kubeconfig,
    namespaces: [ns],
    concurrency: f.concurrency,
    echo: f.echo,
    args: pacingArgs(f),
  });
  const startupMs = await op.ready();
  const resources: ResourcePoint[] = [];
  if (first) {
    await sleep(2000);
    const idleCpuPercent = await cpuOver(op, 5000);
    resources.push({
      miniClusters: 0,
      pods: 0,
      rssBytes: op.rssBytes(),
      rssAnonBytes: op.rssSplit().anonBytes,
      idleCpuPercent,
      startupToSyncedMs: startupMs,
    });
    say(
      `N=0: RSS ${(op.rssBytes() / 2 ** 20).toFixed(1)} MiB, start-up ${startupMs.toFixed(0)} ms`,
    );
  }

  const observer = await CreationObserver.open(
    kubeconfig,
    ns,
    ctx.childrenPerMiniCluster,
    ctx.childKinds,
  );
  const m0 = await op.metrics();
  const cpu0 = op.cpuSeconds();
  const createdAt = new Map<string, number>();
  const all = names(n);
  const stopProgress = progress(observer, n);
  const t0 = performance.now();
  try {
    await pool(all, f.createConcurrency, async (name) => {
      await client.create(MiniClusters, benchMiniCluster(name, ns, f.size));
      createdAt.set(name, performance.now());
    });
    say(`N=${n}: ${n} MiniClusters created in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    // Generous: on a shared 2-core machine under load the children of 1,000 take minutes.
    await observer.until(
      () => observer.childrenAt.size >= n,
      60_000 + n * 900,
      () => `${observer.childrenAt.size}/${n} MiniClusters have every child`,
    );
    const allChildrenMs = Math.max(...observer.childrenAt.values()) - t0;
    say(`N=${n}: all children in ${(allChildrenMs / 1000).toFixed(1)} s; waiting for Ready`);
    await observer.until(
      () => observer.readyAt.size >= n,
      120_000 + n * 1000,
      () => `${observer.readyAt.size}/${n} MiniClusters Ready`,
    );
    stopProgress();
    const allReadyMs = Math.max(...observer.readyAt.values()) - t0;
    say(`N=${n}: all Ready in ${(allReadyMs / 1000).toFixed(1)} s`);
    await sleep(1000); // the last status writes and their Events
    const m1 = await op.metrics();
    const cpu1 = op.cpuSeconds();

    const childrenMs = all.map((x) => observer.childrenAt.get(x)! - createdAt.get(x)!);
    const readyMs = all.map((x) => observer.readyAt.get(x)! - createdAt.get(x)!);
    const byVerb = diffCounts(
      groupBy(m0, "api_requests_total", "verb"),
      groupBy(m1, "api_requests_total", "verb"),
    );
    const perMc = Object.fromEntries(
      Object.entries(byVerb).filter(([, v]) => v !== 0).map(([k, v]) => [k, v / n]),
    );
    const writesByResource = diffCounts(writesKeyed(m0), writesKeyed(m1));
    const run: Omit<ScaleRun, "rawClientMs" | "operatorToRawRatio"> = {
      miniClusters: n,
      size: f.size,
      concurrency: f.concurrency,
      childrenMs: summarize(childrenMs),
      readyMs: summarize(readyMs),
      allChildrenMs,
      allReadyMs,
      requestsPerMiniCluster: perMc,
      writesPerMiniClusterByResource: Object.fromEntries(
        Object.entries(writesByResource).filter(([, v]) => v !== 0).map(([k, v]) => [k, v / n]),
      ),
      readsPerMiniCluster: READ_VERBS.reduce((a, v) => a + (byVerb[v] ?? 0), 0) / n,
      writesPerMiniCluster: (writeCount(m1) - writeCount(m0)) / n,
      minimumWritesPerMiniCluster: minimumWrites(ctx.childrenPerMiniCluster),
      reconcilesPerMiniCluster: (reconcileState(m1).reconciles - reconcileState(m0).reconciles) / n,
      operatorCpuSeconds: cpu1 - cpu0,
      samples: { childrenMs, readyMs },
    };
    return { op, ns, run, startupMs, resources };
  } catch (e) {
    stopProgress();
    say(`operator log tail:\n${op.logTail(30)}`);
    await op.kill();
    throw e;
  } finally {
    await observer.stop();
  }
}

/**
 * The operator's run without the operator: a fresh namespace nobody reconciles, the same N
 * MiniClusters created the same way, and their children created by the raw client
 * (bench/raw_client.ts) as each MiniCluster's create returns. Timed like the operator's run: from
 * the first MiniCluster create to the last child seen by the same observer. Then waits for the raw
 * Jobs' pods to be Ready, so that they do not load the apiserver during what is measured next
 * (they are left in place).
 */
async function rawRun(ctx: Context, n: number): Promise<number> {
  const { client, kubeconfig, f } = ctx;
  const ns = `bench-raw-n${n}-${crypto.randomUUID().slice(0, 6)}`;
  await createNamespace(client, ns);
  const observer = await CreationObserver.open(
    kubeconfig,
    ns,
    ctx.childrenPerMiniCluster,
    ctx.childKinds,
  );
  say(`N=${n}: the same creates by a raw client (namespace ${ns})`);
  let ms: number;
  try {
    const mcs = names(n).map((name) => benchMiniCluster(name, ns, f.size));
    const r = await rawCreates(client, mcs, {
      createConcurrency: f.createConcurrency,
      concurrency: f.concurrency,
    });
    await observer.until(
      () => observer.childrenAt.size >= n,
      60_000,
      () => `raw client: ${observer.childrenAt.size}/${n} MiniClusters have every child`,
    );
    ms = Math.max(...observer.childrenAt.values()) - r.t0;
    const sec = (x: number) => (x / 1000).toFixed(2);
    say(
      `N=${n}: raw client: ${n} MiniClusters created in ${sec(r.miniClustersMs)} s; ` +
        `${r.objects} children, last create returned at ${sec(r.ms)} s, last seen at ${sec(ms)} s`,
    );
  } finally {
    await observer.stop();
  }
  await waitPodsReady(client, ns, n * f.size, 120_000 + n * 1000);
  say(`N=${n}: the raw run's ${n * f.size} pods are Ready`);
  return ms;
}

/** The idle window and a restart, with `n` MiniClusters present. */
async function idleAndRestart(
  ctx: Context,
  op: OperatorProcess,
  ns: string,
  n: number,
): Promise<{ idle: IdleRun; point: ResourcePoint; notes: string[] }> {
  const { f } = ctx;
  await sleep(3000);
  say(`N=${n}: idle window of ${f.idleMs / 1000} s`);
  const m0 = await op.metrics();
  const c0 = op.cpuSeconds();
  const t0 = performance.now();
  await sleep(f.idleMs);
  const m1 = await op.metrics();
  const windowMs = performance.now() - t0;
  const cpuPercent = (100 * (op.cpuSeconds() - c0)) / (windowMs / 1000);
  const rssBytes = op.rssBytes();
  const rssAnonBytes = op.rssSplit().anonBytes;
  const byVerb = diffCounts(
    groupBy(m0, "api_requests_total", "verb"),
    groupBy(m1, "api_requests_total", "verb"),
  );
  const idle: IdleRun = {
    miniClusters: n,
    windowMs,
    writesPerMinute: perMinute(writeCount(m1) - writeCount(m0), windowMs),
    reconcilesPerMinute: perMinute(
      reconcileState(m1).reconciles - reconcileState(m0).reconciles,
      windowMs,
    ),
    requestsPerMinuteByVerb: Object.fromEntries(
      Object.entries(byVerb).map(([k, v]) => [k, perMinute(v, windowMs)]),
    ),
    cpuPercent,
  };
  const pods = await countPods(ctx.client, ns);

  say(`N=${n}: restarting the operator over ${n} MiniClusters`);
  await op.stop();
  const next = await OperatorProcess.start(op.opts);
  try {
    const startupToSyncedMs = await next.ready(300_000);
    await waitInitialReconciles(next, n, 120_000 + n * 200);
    await sleep(2000);
    const writesAfterRestart = writeCount(await next.metrics());
    const restartedRss = next.rssBytes();
    await next.stop();
    return {
      idle,
      point: {
        miniClusters: n,
        pods,
        rssBytes,
        rssAnonBytes,
        idleCpuPercent: cpuPercent,
        startupToSyncedMs,
        writesAfterRestart,
      },
      notes: [
        `N=${n}: RSS of the operator that created everything ${mib(rssBytes)} MiB; of a fresh ` +
        `process after its start-up reconciles ${mib(restartedRss)} MiB.`,
      ],
    };
  } catch (e) {
    say(`restarted operator log tail:\n${next.logTail(30)}`);
    await next.kill();
    throw e;
  }
}

/** The 1-minute load average: other work on the machine shows in every number here. */
function loadAverage(): number {
  return Number(Deno.readTextFileSync("/proc/loadavg").split(" ")[0]);
}

const mib = (b: number) => (b / 2 ** 20).toFixed(1);

/** --rss-10k: memory and start-up with 10,000 MiniClusters (children complete, pods as far as made). */
async function tenThousand(ctx: Context, present: number): Promise<ResourcePoint> {
  const { client, kubeconfig, f } = ctx;
  const n = 10_000 - present;
  const ns = `bench-n10000-${crypto.randomUUID().slice(0, 6)}`;
  await createNamespace(client, ns);
  const op = await OperatorProcess.start({
    kubeconfig,
    namespaces: [ns],
    concurrency: f.concurrency,
    echo: f.echo,
    args: pacingArgs(f),
  });
  await op.ready();
  const observer = await CreationObserver.open(
    kubeconfig,
    ns,
    ctx.childrenPerMiniCluster,
    ctx.childKinds,
  );
  const stop = progress(observer, n);
  try {
    await pool(names(n), f.createConcurrency, async (name) => {
      await client.create(MiniClusters, benchMiniCluster(name, ns, 1));
    });
    await observer.until(
      () => observer.childrenAt.size >= n,
      120_000 + n * 300,
      () => `${observer.childrenAt.size}/${n} MiniClusters have every child`,
    );
  } finally {
    stop();
    await observer.stop();
  }
  const idleCpuPercent = await cpuOver(op, 20_000);
  const rssBytes = op.rssBytes();
  const rssAnonBytes = op.rssSplit().anonBytes;
  const pods = await countPods(client, ns);
  await op.stop();
  const next = await OperatorProcess.start(op.opts);
  const startupToSyncedMs = await next.ready(600_000);
  await next.stop();
  return { miniClusters: n, pods, rssBytes, rssAnonBytes, idleCpuPercent, startupToSyncedMs };
}

async function main(): Promise<number> {
  const f = flags(Deno.args);
  Deno.addSignalListener("SIGINT", () => Deno.exit(130)); // runs the unload teardown
  if (f.peer) return await peerMain(f);
  if (f.real) {
    const kubeconfig = f.kubeconfig ?? join(Deno.cwd(), ".cluster", "kubeconfig");
    return await realNodesBench(kubeconfig, f.runs, f.realSizes, f.realContenders, f.out);
  }
  if (f.fluxAlone) return await fluxAloneBench(f.realSizes, f.runs, f.out);
  if (f.startup) return await startupBench(Math.max(...f.ns), f.runs, f.out);
  if (f.inCluster) {
    const kubeconfig = f.kubeconfig ?? join(Deno.cwd(), ".cluster", "kubeconfig");
    // One N: the largest asked for (the default list's 1,000).
    return await inClusterMemoryBench(kubeconfig, Math.max(...f.ns), f.size, f.out);
  }
  const loadAtStart = loadAverage();
  let kubeconfig = f.kubeconfig;
  // Every N runs twice (the operator, then the raw client), and both runs' pods stay.
  const totalPods = f.ns.reduce((a, n) => a + 2 * n * f.size, 0) + (f.rss10k ? 10_000 : 0);
  const nodes = Math.ceil(totalPods / PODS_PER_NODE) + 1;
  if (!kubeconfig) {
    say(`starting a private full cluster (then ${Math.max(nodes, 4)} KWOK nodes)`);
    kubeconfig = await startPrivateCluster({ prefix: "minicluster-bench-", nodes: 4 });
  }
  await installCrds(kubeconfig);
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    await ensureNodes(client, nodes);
    const version = await client.request<{ gitVersion: string }>("GET", "/version");
    const probe = benchMiniCluster("x", "x", f.size);
    const children = await childObjects({
      ...probe,
      metadata: { ...probe.metadata, uid: crypto.randomUUID() },
    } as MiniCluster);
    const childrenPerMiniCluster = children.length;
    const childKinds = [...new Set(children.map((c) => c.rt))];
    const ctx: Context = { client, kubeconfig, f, childrenPerMiniCluster, childKinds };
    const notes: string[] = [
      `MiniClusters of size ${f.size} (pods kept Running by KWOK); ${childrenPerMiniCluster} ` +
      `children each (${children.map((c) => c.object.kind).join(", ")}).`,
      `Minimum writes per MiniCluster = ${childrenPerMiniCluster} child creates + finalizer + ` +
      `one status write + one Event (Ready) = ${minimumWrites(childrenPerMiniCluster)}. The ` +
      `operator writes a MiniCluster's status first about 1 s after creating its Job: a cluster ` +
      `Ready by then costs the minimum; one whose pods take longer gets a second status write ` +
      `(not ready, then Ready), which a status that reports what it sees cannot avoid. Further ` +
      `status writes are progress (the ready pod count), at most one per 3 s per MiniCluster.`,
      `Latencies run from each MiniCluster's create returning to the watch event that completes ` +
      `it, as seen by a separate client; the MiniClusters are created by ${f.createConcurrency} ` +
      `concurrent requests.`,
      `Raw client: the operator's run without the operator. In a namespace no operator watches, ` +
      `the same MiniClusters are created the same way (${f.createConcurrency} concurrent ` +
      `requests); as each create returns, the MiniCluster goes to one of ${f.concurrency} ` +
      `workers, which creates its children one after the other (as a reconcile does), exactly ` +
      `as the operator's pure builders make them (CURVE keys generated): owned by the ` +
      `MiniCluster, the Job not suspended, so the Job controller, scheduler and KWOK make and ` +
      `run the same pods. No finalizer, status or Events. Timed like the operator's run: from ` +
      `the first MiniCluster create to the last child seen by the same watching client.`,
      `Ready needs the Job controller (kube-controller-manager, default client QPS 20) to create ` +
      `every pod, KWOK to run it and the scheduler to bind it: at large N the Ready time is ` +
      `theirs, not the operator's.`,
    ];
    const runs: ScaleRun[] = [];
    const resources: ResourcePoint[] = [];
    let idle: IdleRun | undefined;
    for (const [i, n] of f.ns.entries()) {
      const r = await scaleRun(ctx, n, i === 0);
      resources.push(...r.resources);
      const rawMs = await rawRun(ctx, n);
      runs.push({
        ...r.run,
        rawClientMs: rawMs,
        operatorToRawRatio: ratio(r.run.allChildrenMs, rawMs),
      });
      if (i === f.ns.length - 1) {
        const x = await idleAndRestart(ctx, r.op, r.ns, n);
        idle = x.idle;
        resources.push(x.point);
        notes.push(...x.notes);
      } else await r.op.stop();
    }
    if (f.rss10k) {
      say("10,000 MiniClusters for the memory point");
      const p = await tenThousand(ctx, 0);
      resources.push(p);
      notes.push(
        `10,000 point: size-1 MiniClusters, measured once every child existed; ${p.pods} pods ` +
          `had been created by then.`,
      );
    }
    const base = {
      date: new Date().toISOString(),
      machine: {
        cpus: navigator.hardwareConcurrency,
        memoryBytes: Deno.systemMemoryInfo().total,
        deno: Deno.version.deno,
        kubernetes: version.gitVersion,
        loadAverage: { start: loadAtStart, end: loadAverage() },
      },
      notes,
      runs,
      idle,
      resources,
    };
    const results: BenchResults = { ...base, targets: checkTargets(base) };
    console.log(formatReport(results));
    await Deno.mkdir(f.out, { recursive: true });
    const day = results.date.slice(0, 10);
    await Deno.writeTextFile(join(f.out, `${day}.json`), toJson(results));
    await Deno.writeTextFile(join(f.out, `${day}-latency.svg`), latencyPlot(results));
    await Deno.writeTextFile(join(f.out, `${day}-memory.svg`), memoryPlot(results));
    say(`wrote ${join(f.out, day)}.json, -latency.svg, -memory.svg`);
    return 0;
  } finally {
    client.close();
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main());
  } catch (e) {
    say(`error: ${e instanceof Error ? e.stack ?? e.message : e}`);
    Deno.exit(1);
  }
}
