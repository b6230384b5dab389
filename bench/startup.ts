/**
 * `deno task bench --startup [--n=10000] [--runs=5]`: what a restart costs over many
 * MiniClusters, for both operators. On a control plane of its own (etcd and kube-apiserver only, so
 * nothing changes the objects but the operators), N MiniClusters of size 1 are made with every
 * child our operator makes and one pod each, and the pods and Jobs are given the status a running
 * pod has (a second field manager, as the kubelet and the Job controller add). Each operator is then
 * started `runs` times: the time from its spawn to its caches synced (ours: /readyz; the Go
 * operator: controller-runtime's "Starting workers"), its CPU seconds and RSS then, and its RSS and
 * CPU 30 s later. Ours goes first (after one unreported run that writes the finalizers and status
 * of the new MiniClusters and then goes quiet), then the CRD is swapped for the Go operator's.
 */
import { join } from "node:path";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../runtime/client/client.ts";
import { Jobs, Pods } from "../runtime/client/resources.ts";
import { MiniClusters } from "../api/resource.ts";
import type { MiniCluster } from "../api/mod.ts";
import { installCrd } from "../hack/conformance/run.ts";
import { installCrds } from "../testing/crds.ts";
import { writeCount } from "../testing/metrics_text.ts";
import { OperatorProcess } from "../testing/operator_process.ts";
import { startPrivateCluster } from "../testing/private_cluster.ts";
import { benchMiniCluster, createNamespace, pool } from "./cluster_state.ts";
import { goOperator } from "./peer/contenders.ts";
import { childObjects } from "./raw_client.ts";
import { summarize } from "./stats.ts";

const NAMESPACE = "startup";
/** How long after its caches synced an operator's memory is read again. */
const SETTLE_MS = 30_000;
const WRITERS = 16;
/** The field manager of the status the seed writes (what the kubelet and Job controller own). */
const STATUS_MANAGER = "bench-status";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (s: string) => console.error(`[bench startup] ${s}`);
const mib = (bytes: number) => bytes / 2 ** 20;
const median = (xs: number[]) => summarize(xs).p50;

export interface StartupRun {
  syncedMs: number;
  cpuAtSyncedSeconds: number;
  rssAtSyncedBytes: number;
  rssSettledBytes: number;
  cpuSettledSeconds: number;
}

export interface StartupResult {
  miniClusters: number;
  objects: number;
  /** The length of one pod's JSON as the apiserver lists it. */
  podJsonBytes: number;
  settleMs: number;
  loadAverage: string;
  ours: StartupRun[];
  go: StartupRun[];
}

/** A pod of `job` as its controller makes it, placed on a node. */
function podOf(job: Job, name: string): Pod {
  const tpl = job.spec!.template;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      ...tpl.metadata,
      name,
      namespace: job.metadata!.namespace,
      ownerReferences: [{
        apiVersion: "batch/v1",
        kind: "Job",
        name: job.metadata!.name!,
        uid: job.metadata!.uid!,
        controller: true,
        blockOwnerDeletion: true,
      }],
    },
    spec: { ...tpl.spec!, nodeName: "kwok-node-0" },
  };
}

/** The status of a Running, Ready pod (as KWOK reports it). */
function runningStatus(pod: Pod, index: number, now: string): Pod["status"] {
  const ip = `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`;
  const types = [
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
  ];
  return {
    phase: "Running",
    conditions: types.map((type) => ({ type, status: "True", lastTransitionTime: now })),
    hostIP: "10.0.0.1",
    hostIPs: [{ ip: "10.0.0.1" }],
    podIP: ip,
    podIPs: [{ ip }],
    startTime: now,
    qosClass: "BestEffort",
    containerStatuses: pod.spec!.containers.map((c) => ({
      name: c.name,
      image: c.image!,
      imageID: "",
      containerID: `kwok://${crypto.randomUUID()}`,
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: now } },
    })),
  };
}

/**
 * N MiniClusters in namespace `startup` with every child and a running pod each; resolves the
 * number of objects.
 */
async function seedMiniClusters(client: KubeClient, n: number): Promise<number> {
  const width = String(n - 1).length;
  const names = Array.from({ length: n }, (_, i) => `mc-${String(i).padStart(width, "0")}`);
  let objects = 0;
  let done = 0;
  const t0 = performance.now();
  await pool(names.map((name, index) => ({ name, index })), WRITERS, async ({ name, index }) => {
    const mc = await client.create<MiniCluster>(MiniClusters, benchMiniCluster(name, NAMESPACE, 1));
    const now = new Date().toISOString();
    for (const child of await childObjects(mc)) {
      const made = await client.create<{ metadata?: { name?: string } }>(child.rt, child.object);
      objects++;
      if (child.rt !== Jobs) continue;
      const job = made as Job;
      const pod = await client.create<Pod>(Pods, podOf(job, `${job.metadata!.name}-0-${index}`));
      await client.patch(
        Pods,
        NAMESPACE,
        pod.metadata!.name!,
        {
          status: runningStatus(pod, index, now),
        },
        "merge",
        { subresource: "status", fieldManager: STATUS_MANAGER },
      );
      await client.patch(
        Jobs,
        NAMESPACE,
        job.metadata!.name!,
        {
          status: { active: 1, ready: 1, startTime: now, uncountedTerminatedPods: {} },
        },
        "merge",
        { subresource: "status", fieldManager: STATUS_MANAGER },
      );
      objects++;
    }
    objects++;
    if (++done % 1000 === 0) {
      say(`${done}/${n} MiniClusters made (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
    }
  });
  return objects;
}

/** Starts our operator, runs it to quiet (no write for 10 s), and stops it. */
async function oursUntilQuiet(kubeconfig: string): Promise<void> {
  const op = await OperatorProcess.start({ kubeconfig, namespaces: [NAMESPACE] });
  try {
    await op.ready(600_000);
    let last = -1;
    for (;;) {
      const writes = writeCount(await op.metrics());
      if (writes === last) break;
      last = writes;
      await sleep(10_000);
    }
    say(`our operator wrote ${last} times over the new MiniClusters, then went quiet`);
  } finally {
    await op.stop();
  }
}

interface Started {
  cpuSeconds(): number;
  rssBytes(): number;
  stop(): Promise<unknown>;
}

async function measure(start: () => Promise<Started>): Promise<StartupRun> {
  const t0 = performance.now();
  const op = await start();
  const syncedMs = performance.now() - t0;
  const cpuAtSyncedSeconds = op.cpuSeconds();
  const rssAtSyncedBytes = op.rssBytes();
  await sleep(SETTLE_MS);
  const run = {
    syncedMs,
    cpuAtSyncedSeconds,
    rssAtSyncedBytes,
    rssSettledBytes: op.rssBytes(),
    cpuSettledSeconds: op.cpuSeconds(),
  };
  await op.stop();
  return run;
}

export async function startupBench(n: number, runs: number, out: string): Promise<number> {
  const kubeconfig = await startPrivateCluster({
    prefix: "minicluster-bench-startup-",
    controlPlaneOnly: true,
  });
  const logDir = await Deno.makeTempDir({ prefix: "minicluster-bench-startup-logs-" });
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    await installCrds(kubeconfig);
    await createNamespace(client, NAMESPACE);
    say(`making ${n} MiniClusters of size 1 with every child and a running pod each`);
    const objects = await seedMiniClusters(client, n);
    const pods = await client.list<Pod>(Pods, { namespace: NAMESPACE, limit: 1 });
    const podJsonBytes = JSON.stringify(pods.items[0]).length;
    await oursUntilQuiet(kubeconfig);

    const ours: StartupRun[] = [];
    for (let i = 0; i < runs; i++) {
      ours.push(
        await measure(async () => {
          const op = await OperatorProcess.start({ kubeconfig, namespaces: [NAMESPACE] });
          await op.ready(600_000);
          return op;
        }),
      );
      say(`ours run ${i + 1}: ${line(ours[i])}`);
    }
    const peer = await goOperator();
    for (const crd of [peer.crd].flat()) await installCrd(client, crd);
    const go: StartupRun[] = [];
    for (let i = 0; i < runs; i++) {
      go.push(await measure(() => peer.start(kubeconfig, NAMESPACE, logDir)));
      say(`go run ${i + 1}: ${line(go[i])}`);
    }

    const result: StartupResult = {
      miniClusters: n,
      objects,
      podJsonBytes,
      settleMs: SETTLE_MS,
      loadAverage: Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" "),
      ours,
      go,
    };
    const text = report(result);
    console.log(text);
    await Deno.mkdir(out, { recursive: true });
    const base = join(out, `${new Date().toISOString().slice(0, 10)}-startup-n${n}`);
    await Deno.writeTextFile(`${base}.json`, JSON.stringify(result, null, 2) + "\n");
    await Deno.writeTextFile(`${base}.txt`, text + "\n");
    say(`wrote ${base}.json and .txt`);
    return 0;
  } finally {
    client.close();
    await Deno.remove(logDir, { recursive: true }).catch(() => {});
  }
}

function line(r: StartupRun): string {
  return `synced ${(r.syncedMs / 1000).toFixed(1)} s, CPU ${r.cpuAtSyncedSeconds.toFixed(1)} s, ` +
    `RSS ${mib(r.rssAtSyncedBytes).toFixed(0)} MiB, ${SETTLE_MS / 1000} s later ` +
    `${mib(r.rssSettledBytes).toFixed(0)} MiB`;
}

/** The side-by-side table: medians, and every run's value. */
export function report(r: StartupResult): string {
  const rows: [string, (x: StartupRun) => number, (v: number) => string][] = [
    ["caches synced (s)", (x) => x.syncedMs / 1000, (v) => v.toFixed(1)],
    ["CPU until synced (s)", (x) => x.cpuAtSyncedSeconds, (v) => v.toFixed(1)],
    ["RSS when synced (MiB)", (x) => mib(x.rssAtSyncedBytes), (v) => v.toFixed(0)],
    [`RSS ${r.settleMs / 1000} s later (MiB)`, (x) => mib(x.rssSettledBytes), (v) => v.toFixed(0)],
    [`CPU after ${r.settleMs / 1000} s more (s)`, (x) => x.cpuSettledSeconds, (v) => v.toFixed(1)],
  ];
  const out = [
    `start-up over ${r.miniClusters} MiniClusters (${r.objects} objects, a pod's JSON ` +
    `${r.podJsonBytes} bytes), ${r.ours.length} runs each, load average ${r.loadAverage}`,
    `| measure (median) | ours | Go | ours/Go | ours, every run | Go, every run |`,
    `| --- | --- | --- | --- | --- | --- |`,
  ];
  for (const [name, value, fmt] of rows) {
    const a = median(r.ours.map(value)), b = median(r.go.map(value));
    out.push(
      `| ${name} | ${fmt(a)} | ${fmt(b)} | ${(a / b).toFixed(2)} | ` +
        `${r.ours.map((x) => fmt(value(x))).join(", ")} | ${
          r.go.map((x) => fmt(value(x))).join(", ")
        } |`,
    );
  }
  const ratio = (f: (x: StartupRun) => number) =>
    (median(r.ours.map(f)) / median(r.go.map(f))).toFixed(2);
  out.push(`startup ratio caches-synced (ours/go): ${ratio((x) => x.syncedMs)}`);
  out.push(`startup ratio rss-settled (ours/go): ${ratio((x) => x.rssSettledBytes)}`);
  return out.join("\n");
}
