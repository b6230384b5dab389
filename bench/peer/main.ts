/**
 * `deno task bench --peer`: this operator and the Go Flux Operator, the same scenario on the same
 * apiserver in one invocation, one operator at a time, each in a fresh namespace under its own
 * CRD, the order alternating across repetitions (`--reps`). Requests are counted from the
 * apiserver's audit log (audit.ts), each operator under a client identity of its own
 * (identity.ts). Writes `<out>/<date>-peer-size<S>.json`, `.txt` and `.svg`.
 */
import { dirname, join } from "node:path";
import { KubeClient } from "../../runtime/client/client.ts";
import { startPrivateCluster } from "../../testing/private_cluster.ts";
import { restartComponent } from "../../hack/cluster/lifecycle.ts";
import { childObjects } from "../raw_client.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { ensureNodes } from "../cluster_state.ts";
import { type Flags, pacingArgs } from "../flags.ts";
import { AuditLog, auditPolicy } from "./audit.ts";
import { type Contender, goOperator, ours } from "./contenders.ts";
import { bindClusterAdmin, kubeconfigFor } from "./identity.ts";
import { ApfReader } from "./apf.ts";
import { formatPeerReport, peerPlot, type PeerResults } from "./report.ts";
import { type PeerContext, type PeerRun, peerRun } from "./run.ts";

const say = (msg: string) => console.error(`[bench --peer] ${msg}`);
const PODS_PER_NODE = 100;

function loadAverage(): number {
  return Number(Deno.readTextFileSync("/proc/loadavg").split(" ")[0]);
}

/** The pids of kube-apiserver and etcd, from the cluster's state (hack/cluster/state.ts). */
async function controlPlanePids(dir: string): Promise<number[]> {
  const state = JSON.parse(await Deno.readTextFile(join(dir, "state.json")));
  return [state.pids["kube-apiserver"], state.pids.etcd];
}

export async function peerMain(f: Flags): Promise<number> {
  if (f.kubeconfig) {
    throw new Error("--peer starts its own cluster (it needs the apiserver's audit log)");
  }
  const loadAtStart = loadAverage();
  if (f.only !== "ours") say("building (or finding) the Go operator");
  const go = f.only === "ours" ? undefined : await goOperator();
  const users = ["bench-ours", "bench-go"];
  // Pods of one run at a time: each namespace is removed before the next run.
  const nodes = Math.ceil(Math.max(...f.ns) * f.size / PODS_PER_NODE) + 1;
  say(`starting a private full cluster with an audit log (then ${Math.max(nodes, 4)} KWOK nodes)`);
  const kubeconfig = await startPrivateCluster({
    prefix: "minicluster-bench-peer-",
    nodes: 4,
    auditPolicy: auditPolicy(users),
  });
  const dir = dirname(kubeconfig);
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    await ensureNodes(client, nodes);
    const version = await client.request<{ gitVersion: string }>("GET", "/version");
    const probe = sampleMiniCluster("x", "x", { size: f.size });
    const children = (await childObjects({
      ...probe,
      metadata: { ...probe.metadata, uid: crypto.randomUUID() },
    } as MiniCluster)).length;
    const contenders: Contender[] = [
      ...(f.only === "go" ? [] : [
        ours(children, f.concurrency, f.echo, pacingArgs(f), f.cpuProfile, f.operatorV8Flags),
      ]),
      ...(go ? [go] : []),
    ];
    const ctx: PeerContext = {
      kubeconfig,
      kubeconfigs: {
        ours: await kubeconfigFor(kubeconfig, "bench-ours"),
        go: await kubeconfigFor(kubeconfig, "bench-go"),
      },
      audit: new AuditLog(join(dir, "logs", "audit.log")),
      logDir: join(dir, "logs"),
      size: f.size,
      createConcurrency: f.createConcurrency,
      idleMs: f.idleMs,
      controlPlanePids: await controlPlanePids(dir),
      apf: new ApfReader(await Deno.readTextFile(kubeconfig)),
      restartKwok: () => restartComponent(dir, "kwok"),
      profileOut: f.cpuProfile ? f.out : undefined,
    };
    await bindClusterAdmin(client, users);
    const runs: PeerRun[] = [];
    const notes = [
      `MiniClusters of size ${f.size}, created by ${f.createConcurrency} concurrent requests ` +
      `as fast as they return; pods kept Running by KWOK. Children: ours ${children}, the Go ` +
      `operator 3 (entrypoint ConfigMap with the CURVE certificate, headless Service, Job).`,
      "Requests are the apiserver's audit events of each operator's own user (Metadata level, " +
      "one per request; a watch counts when it starts), from the first create until the " +
      "operator has written nothing for 5 s after every pod got Ready; the idle window follows. " +
      "CPU and RSS at the end: 1 s after every pod Ready.",
      "Each operator authenticates as a user of group system:serviceaccounts bound to " +
      "cluster-admin, so API Priority and Fairness places it as a deployed operator's " +
      "ServiceAccount (FlowSchema service-accounts, priority level workload-low); the bench's " +
      "creates are a cluster admin's (exempt). The Go operator watches every namespace; ours one.",
      "Ready: every pod of the MiniCluster's Job Ready, seen by a separate watching client.",
      `Our operator ran with --concurrency=${f.concurrency}` +
      (f.writesInFlight === undefined
        ? " and its default --max-writes-in-flight."
        : ` --max-writes-in-flight=${f.writesInFlight}.`) +
      (f.pacingOff === undefined ? "" : ` Pacing switched off: --pacing-off=${f.pacingOff}.`) +
      (f.operatorV8Flags === undefined ? "" : ` V8 flags: ${f.operatorV8Flags}.`) +
      (f.cpuProfile
        ? " Profiled (V8's sampling profiler attached: CPU is higher than unprofiled)."
        : ""),
    ];
    // Written again after every run, so that an interrupted invocation keeps what it measured.
    const write = async (final: boolean) => {
      const results: PeerResults = {
        date: new Date().toISOString(),
        machine: {
          cpus: navigator.hardwareConcurrency,
          deno: Deno.version.deno,
          kubernetes: version.gitVersion,
          loadAverage: { start: loadAtStart, end: loadAverage() },
          complete: final,
        },
        notes,
        runs,
      };
      const report = formatPeerReport(results);
      if (final) console.log(report);
      await Deno.mkdir(f.out, { recursive: true });
      const base = join(f.out, `${results.date.slice(0, 10)}-peer-size${f.size}`);
      await Deno.writeTextFile(`${base}.json`, JSON.stringify(results, null, 2) + "\n");
      await Deno.writeTextFile(`${base}.txt`, report + "\n");
      await Deno.writeTextFile(`${base}.svg`, peerPlot(results));
      say(`wrote ${base}.json, .txt, .svg (${runs.length} runs)`);
    };
    let order = 0;
    const total = f.ns.length * f.reps * contenders.length;
    for (const n of f.ns) {
      for (let rep = 0; rep < f.reps; rep++) {
        // Alternates who goes first: whoever runs second meets a warmer apiserver and etcd.
        const sequence = (order / 2) % 2 === 0 ? contenders : [...contenders].reverse();
        for (const c of sequence) {
          runs.push(await peerRun(ctx, c, n, order, order === total - 1));
          order++;
          await write(false);
        }
      }
    }
    await write(true);
    return 0;
  } finally {
    client.close();
  }
}
