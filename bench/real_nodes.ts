// deno task bench --real [--runs=5] [--real-size=3] — how long real Flux brokers take to form an
// instance on the real nodes of the local cluster (`deno task cluster up --real-nodes 1`).
//
// Per run: a fresh MiniCluster of the local Flux images pinned to the real nodes, reconciled by
// this operator as a local process watching the bench's namespace. Two times: from the create (as
// `kubectl apply` sends it) to every broker joined, as the lead broker answers `flux overlay
// status` (polled once a second through the generated flux-connect.sh, so a time is late by up to
// a second plus one exec); and from the start of the last broker's container (its startedAt,
// whole seconds) to that same moment. Medians go to the report and bench/results/.

import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../api/mod.ts";
import { MiniClusters } from "../api/resource.ts";
import { KubeClient } from "../runtime/client.ts";
import { isNotFound } from "../runtime/errors.ts";
import { Pods } from "../runtime/resources.ts";
import { JOB_NAME_LABEL } from "../controllers/minicluster/children/names.ts";
import { REAL_NODE_LABEL } from "../hack/cluster/real_node_config.ts";
import { kubectl } from "../hack/kubectl.ts";
import { FLUX_APP_IMAGE, FLUX_VIEW_IMAGE } from "../hack/images/refs.ts";
import { installCrds } from "../testing/crds.ts";
import { OperatorProcess } from "../testing/operator_process.ts";
import { createNamespace } from "./cluster_state.ts";
import { quantile } from "./stats.ts";

const median = (xs: number[]) => quantile([...xs].sort((a, b) => a - b), 0.5);

const say = (msg: string) => console.error(`[bench real] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NAMESPACE = "mc-bench-real";

export interface RealRun {
  applyToJoinedMs: number;
  lastStartToJoinedMs: number;
}

function miniCluster(name: string, size: number): MiniCluster {
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name, namespace: NAMESPACE },
    spec: {
      size,
      interactive: true,
      logging: { quiet: true },
      containers: [{ name: "flux", image: FLUX_APP_IMAGE }],
      flux: { container: { image: FLUX_VIEW_IMAGE } },
      pod: {
        nodeSelector: { [REAL_NODE_LABEL]: "true" },
        tolerations: [{ key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" }],
      },
    } as MiniCluster["spec"],
  };
}

async function podsOf(client: KubeClient, name: string): Promise<Pod[]> {
  const list = await client.list<Pod>(Pods, {
    namespace: NAMESPACE,
    labelSelector: `${JOB_NAME_LABEL}=${name}`,
  });
  return list.items;
}

const indexOf = (p: Pod) => p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"];

/** The moment the lead broker reports every broker joined (polled), in epoch milliseconds. */
async function joinedAt(
  client: KubeClient,
  kubeconfig: string,
  name: string,
  size: number,
  deadline: number,
): Promise<number> {
  while (Date.now() < deadline) {
    const lead = (await podsOf(client, name)).find((p) =>
      indexOf(p) === "0" && p.status?.containerStatuses?.some((c) => c.state?.running)
    );
    if (lead) {
      const out = await kubectl(
        kubeconfig,
        [
          "-n",
          NAMESPACE,
          "exec",
          "-i",
          lead.metadata!.name!,
          "-c",
          name,
          "--",
          "bash",
          "/mnt/flux/flux-connect.sh",
        ],
        "flux overlay status --no-pretty\n",
      ).catch(() => "");
      // Rank 0 is "full" once every broker below it in the tree is online.
      if (/^0 \S+: full$/m.test(out)) return Date.now();
    }
    await sleep(1000);
  }
  throw new Error(`${name}: not every one of ${size} brokers joined in time`);
}

/**
 * Deletes the MiniCluster and waits until it is gone: its pods, and the object itself once the
 * operator's cleanup took its finalizer off (the operator must not be stopped before that, or the
 * MiniCluster stays deleting).
 */
async function deleteAndWait(client: KubeClient, name: string): Promise<void> {
  await client.delete(MiniClusters, NAMESPACE, name).catch((e) => {
    if (!isNotFound(e)) throw e;
  });
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const gone = await client.get(MiniClusters, NAMESPACE, name).then(() => false, (e) => {
      if (isNotFound(e)) return true;
      throw e;
    });
    if (gone && (await podsOf(client, name)).length === 0) return;
    await sleep(1000);
  }
  throw new Error(`${name}: the MiniCluster or its pods still there 180 s after the delete`);
}

export async function realNodesBench(
  kubeconfig: string,
  runs: number,
  size: number,
  out: string,
): Promise<number> {
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  await installCrds(kubeconfig);
  await createNamespace(client, NAMESPACE);
  const op = await OperatorProcess.start({ kubeconfig, namespaces: [NAMESPACE] });
  const results: RealRun[] = [];
  try {
    await op.ready();
    for (let i = 0; i < runs; i++) {
      const name = `real-${i}`;
      await deleteAndWait(client, name);
      const t0 = Date.now();
      await client.create(MiniClusters, miniCluster(name, size));
      const joined = await joinedAt(client, kubeconfig, name, size, t0 + 300_000);
      const starts = (await podsOf(client, name)).map((p) =>
        Date.parse(
          p.status?.containerStatuses?.find((c) => c.name === name)?.state?.running?.startedAt ??
            "",
        )
      );
      const lastStart = Math.max(...starts.filter((t) => !Number.isNaN(t)));
      const run = { applyToJoinedMs: joined - t0, lastStartToJoinedMs: joined - lastStart };
      results.push(run);
      say(
        `run ${i + 1}/${runs}: apply → ${size} brokers joined ${
          (run.applyToJoinedMs / 1000).toFixed(1)
        } s; ` +
          `last broker's start → joined ${(run.lastStartToJoinedMs / 1000).toFixed(1)} s`,
      );
      await deleteAndWait(client, name);
    }
  } finally {
    await op.stop();
    client.close();
  }
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  const summary = {
    size,
    runs: results,
    medianApplyToJoinedMs: median(results.map((r) => r.applyToJoinedMs)),
    medianLastStartToJoinedMs: median(results.map((r) => r.lastStartToJoinedMs)),
    loadAverage: load,
  };
  console.log(
    `real nodes, size ${size}, ${runs} runs (load ${load}): apply → every broker joined, median ` +
      `${(summary.medianApplyToJoinedMs / 1000).toFixed(1)} s; last broker's container start → ` +
      `joined, median ${(summary.medianLastStartToJoinedMs / 1000).toFixed(1)} s`,
  );
  const file = join(out, `${new Date().toISOString().slice(0, 10)}-real-nodes.json`);
  await Deno.writeTextFile(file, JSON.stringify(summary, null, 2) + "\n");
  say(`wrote ${file}`);
  return 0;
}
