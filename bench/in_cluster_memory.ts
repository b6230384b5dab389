// deno task bench --in-cluster [--n=1000] [--size=4] — the operator's memory as users deploy it:
// the image of deploy/install.yaml running in the local cluster on a real node
// (`deno task cluster up --real-nodes 1`), idle with no MiniCluster and then with N of them (their
// pods on KWOK nodes), beside the same operator started by `deno run` on the host over the same
// objects (the in-cluster one scaled to 0 meanwhile).
//
// The in-cluster process is read two ways: the kubelet's summary API (what `kubectl top` and
// metrics-server report: the container's working set and anonymous RSS from its cgroup) and
// /proc/<pid>/status of the container's process (the node runs on this machine), so that the
// figure compares with the local process's VmRSS and RssAnon.

import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { MiniClusters } from "../api/resource.ts";
import { KubeClient } from "../runtime/client/client.ts";
import { isAlreadyExists } from "../runtime/client/errors.ts";
import { Pods } from "../runtime/client/resources.ts";
import { kubectl } from "../hack/kubectl.ts";
import { installCrds } from "../testing/crds.ts";
import {
  inClusterManifest,
  OPERATOR_DEPLOYMENT,
  OPERATOR_NAMESPACE,
} from "../testing/in_cluster_install.ts";
import { OperatorProcess, parseRssSplit, parseVmRss } from "../testing/operator_process.ts";
import {
  benchMiniCluster,
  createNamespace,
  ensureNodes,
  pool,
  waitPodsReady,
} from "./cluster_state.ts";

const say = (msg: string) => console.error(`[bench in-cluster] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NAMESPACE = "mc-bench-memory";
const MiB = 1024 * 1024;
/** How long each reading waits after the operator has settled (caches synced, work done). */
const IDLE_MS = 60_000;

/** One reading of one operator process. */
interface MemoryReading {
  /** VmRSS of the process. */
  rssBytes: number;
  /** RssAnon (+ RssShmem) of the process: what grows with the objects it holds. */
  anonBytes: number;
  /** The kubelet's summary of the container (in-cluster only). */
  kubelet?: { workingSetBytes: number; rssBytes: number };
}

interface InClusterMemory {
  miniClusters: number;
  size: number;
  inCluster: { empty: MemoryReading; loaded: MemoryReading };
  local: { loaded: MemoryReading };
  loadAverage: string;
}

async function operatorPod(client: KubeClient): Promise<Pod> {
  const pods = await client.list<Pod>(Pods, {
    namespace: OPERATOR_NAMESPACE,
    labelSelector: "app.kubernetes.io/name=minicluster-operator",
  });
  const running = pods.items.filter((p) =>
    p.status?.phase === "Running" && !p.metadata?.deletionTimestamp
  );
  if (running.length !== 1) {
    throw new Error(`expected one running operator pod, found ${running.length}`);
  }
  return running[0];
}

/** The host pid of the pod's main process: the one whose cgroup names the pod's UID. */
async function hostPid(pod: Pod): Promise<number> {
  // cgroup paths spell the UID with underscores (systemd driver) or dashes (cgroupfs).
  const uid = pod.metadata!.uid!;
  const spellings = [uid, uid.replaceAll("-", "_")];
  const found: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cgroup = await Deno.readTextFile(`/proc/${entry.name}/cgroup`);
      if (!spellings.some((s) => cgroup.includes(s))) continue;
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (cmdline.includes("mod.ts")) found.push(Number(entry.name));
    } catch {
      // The process ended while we looked.
    }
  }
  if (found.length !== 1) throw new Error(`operator process of pod ${uid}: found ${found}`);
  return found[0];
}

function readProc(pid: number): MemoryReading {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return { rssBytes: parseVmRss(status), anonBytes: parseRssSplit(status).anonBytes };
}

async function kubeletReading(
  kubeconfig: string,
  pod: Pod,
): Promise<{ workingSetBytes: number; rssBytes: number }> {
  const summary = JSON.parse(
    await kubectl(kubeconfig, [
      "get",
      "--raw",
      `/api/v1/nodes/${pod.spec!.nodeName}/proxy/stats/summary`,
    ]),
  ) as {
    pods: {
      podRef: { uid: string };
      memory?: { rssBytes?: number };
      containers?: { name: string; memory?: { workingSetBytes?: number; rssBytes?: number } }[];
    }[];
  };
  const stats = summary.pods.find((p) => p.podRef.uid === pod.metadata!.uid);
  const container = stats?.containers?.find((c) => c.name === pod.spec!.containers[0].name);
  // This kubelet (cgroup v2) gives the container's working set but its rss only for the pod; the
  // pod's one container is the operator, so the pod's figure is the operator's.
  const rssBytes = container?.memory?.rssBytes ?? stats?.memory?.rssBytes;
  if (!container?.memory?.workingSetBytes || rssBytes === undefined) {
    throw new Error(`the kubelet has no memory figures for ${pod.metadata!.name} yet`);
  }
  return { workingSetBytes: container.memory.workingSetBytes, rssBytes };
}

async function inClusterReading(kubeconfig: string, client: KubeClient): Promise<MemoryReading> {
  const pod = await operatorPod(client);
  // The summary API refreshes every ~10 s; a just-started container may not be in it yet.
  let kubelet: MemoryReading["kubelet"];
  for (let i = 0; !kubelet; i++) {
    try {
      kubelet = await kubeletReading(kubeconfig, pod);
    } catch (e) {
      if (i >= 12) throw e;
      await sleep(5_000);
    }
  }
  return { ...readProc(await hostPid(pod)), kubelet };
}

async function scaleOperator(kubeconfig: string, replicas: number): Promise<void> {
  await kubectl(kubeconfig, [
    "-n",
    OPERATOR_NAMESPACE,
    "scale",
    `deploy/${OPERATOR_DEPLOYMENT}`,
    `--replicas=${replicas}`,
  ]);
}

/** Every MiniCluster of the namespace has its Job and every pod Ready. */
async function waitSettled(client: KubeClient, n: number, size: number): Promise<void> {
  await waitPodsReady(client, NAMESPACE, n * size, 600_000 + n * 600);
}

const mib = (b: number) => `${(b / MiB).toFixed(1)} MiB`;

function describe(r: MemoryReading): string {
  const kubelet = r.kubelet
    ? `; kubelet: working set ${mib(r.kubelet.workingSetBytes)}, rss ${mib(r.kubelet.rssBytes)}`
    : "";
  return `VmRSS ${mib(r.rssBytes)} (anonymous ${mib(r.anonBytes)})${kubelet}`;
}

export async function inClusterMemoryBench(
  kubeconfig: string,
  n: number,
  size: number,
  out: string,
): Promise<number> {
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    await installCrds(kubeconfig);
    await createNamespace(client, NAMESPACE).catch((e) => {
      if (!isAlreadyExists(e)) throw e;
    });
    // The real nodes are tainted; the MiniClusters' pods go to KWOK nodes (100 pods each).
    await ensureNodes(client, Math.ceil(n * size / 100) + 1);
    say("installing deploy/install.yaml (the local image, on a real node)");
    await kubectl(
      kubeconfig,
      ["apply", "--server-side", "--force-conflicts", "-f", "-"],
      await inClusterManifest([NAMESPACE]),
    );
    await scaleOperator(kubeconfig, 1);
    await kubectl(kubeconfig, [
      "-n",
      OPERATOR_NAMESPACE,
      "rollout",
      "restart",
      `deploy/${OPERATOR_DEPLOYMENT}`,
    ]);
    await kubectl(kubeconfig, [
      "-n",
      OPERATOR_NAMESPACE,
      "rollout",
      "status",
      `deploy/${OPERATOR_DEPLOYMENT}`,
      "--timeout=180s",
    ]);
    // A run stopped half-way leaves its MiniClusters: the "no MiniCluster" reading needs none.
    await kubectl(kubeconfig, ["-n", NAMESPACE, "delete", "minicluster", "--all", "--wait"]);
    await sleep(IDLE_MS);
    const empty = await inClusterReading(kubeconfig, client);
    say(`in-cluster, no MiniCluster: ${describe(empty)}`);

    say(`creating ${n} MiniClusters of size ${size}`);
    const names = Array.from({ length: n }, (_, i) => `mem-${i}`);
    await pool(names, 16, async (name) => {
      await client.create(MiniClusters, benchMiniCluster(name, NAMESPACE, size));
    });
    await waitSettled(client, n, size);
    await sleep(IDLE_MS);
    const loaded = await inClusterReading(kubeconfig, client);
    say(`in-cluster, ${n} MiniClusters: ${describe(loaded)}`);

    say("the same operator by `deno run` on the host, the in-cluster one scaled to 0");
    await scaleOperator(kubeconfig, 0);
    await kubectl(kubeconfig, [
      "-n",
      OPERATOR_NAMESPACE,
      "wait",
      "--for=delete",
      "pod",
      "-l",
      "app.kubernetes.io/name=minicluster-operator",
      "--timeout=120s",
    ]);
    const local = await OperatorProcess.start({ kubeconfig, namespaces: [NAMESPACE] });
    let localLoaded: MemoryReading;
    try {
      await local.ready(300_000);
      await sleep(IDLE_MS);
      localLoaded = { rssBytes: local.rssBytes(), anonBytes: local.rssSplit().anonBytes };
      say(`local, ${n} MiniClusters: ${describe(localLoaded)}`);
      say("deleting the MiniClusters (the local operator removes their finalizers)");
      await kubectl(kubeconfig, ["-n", NAMESPACE, "delete", "minicluster", "--all", "--wait"]);
    } finally {
      await local.stop();
      await scaleOperator(kubeconfig, 1);
    }

    const result: InClusterMemory = {
      miniClusters: n,
      size,
      inCluster: { empty, loaded },
      local: { loaded: localLoaded },
      loadAverage: (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" "),
    };
    console.log(
      [
        `operator memory, in-cluster image on a real node vs deno run on the host ` +
        `(N=${n}, size ${size}, load ${result.loadAverage}):`,
        `  in-cluster, 0 MiniClusters:  ${describe(empty)}`,
        `  in-cluster, ${n} MiniClusters: ${describe(loaded)}`,
        `  deno run,   ${n} MiniClusters: ${describe(localLoaded)}`,
      ].join("\n"),
    );
    await Deno.mkdir(out, { recursive: true });
    const file = join(out, `${new Date().toISOString().slice(0, 10)}-in-cluster-memory.json`);
    await Deno.writeTextFile(file, JSON.stringify(result, null, 2) + "\n");
    say(`wrote ${file}`);
    return 0;
  } finally {
    client.close();
  }
}
