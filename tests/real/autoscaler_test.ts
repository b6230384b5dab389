// docs/elastic.md works as written on real nodes: its MiniCluster with the HorizontalPodAutoscaler
// on CPU, then with KEDA's ScaledObject on the Flux queue, each applied as the page has it (in the
// real scenarios' namespace instead of `default`). metrics-server (`cluster up --metrics`,
// hack/cluster/metrics_server.ts) reads the real kubelets' CPU and the controller manager's HPA
// controller reads it through the aggregation layer; KEDA (`cluster up --keda`,
// hack/cluster/keda.ts) reads the lead broker's queue report. Each writes the MiniCluster's scale
// subresource, and the operator grows and shrinks the Flux instance: a Flux job that burns a core
// grows it from 1 to 2 and its cancellation shrinks it; a job waiting for a node grows it and the
// end of the work shrinks it. Every assertion reads what the API shows or what Flux answers in the
// lead broker.

import assert from "node:assert/strict";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually } from "../harness.ts";
import { parseAllDocuments } from "yaml";
import {
  kedaAvailable,
  kubectl,
  metricsServerAvailable,
  onLead,
  REAL_NAMESPACE,
  type RealEnv,
  realTest,
} from "./env.ts";

const PAGE = new URL("../../docs/elastic.md", import.meta.url);
const NAME = "elastic";

/**
 * The page's manifests (its YAML blocks: the MiniCluster, the ScaledObject, the HPA), moved from
 * `default` to the scenarios' namespace (the ScaledObject's URLs name it too).
 */
async function page(): Promise<{
  miniCluster: MiniCluster;
  scaledObject: Record<string, unknown>;
  hpa: Record<string, unknown>;
  queueHpa: Record<string, unknown>;
}> {
  const markdown = await Deno.readTextFile(PAGE);
  const blocks = [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) =>
    JSON.parse(
      JSON.stringify(parseAllDocuments(m[1])[0].toJSON())
        .replaceAll('"namespace":"default"', `"namespace":"${REAL_NAMESPACE}"`)
        .replaceAll(".default.svc.", `.${REAL_NAMESPACE}.svc.`),
    )
  );
  const one = (what: string, found: Record<string, unknown>[]) => {
    assert.equal(found.length, 1, `docs/elastic.md has one ${what}`);
    return found[0];
  };
  const byKind = (kind: string) => one(kind, blocks.filter((b) => b.kind === kind));
  const hpaOn = (type: string) =>
    one(
      `HorizontalPodAutoscaler on a ${type} metric`,
      blocks.filter((b) => b.kind === "HorizontalPodAutoscaler" && b.spec.metrics[0].type === type),
    );
  return {
    miniCluster: byKind("MiniCluster") as unknown as MiniCluster,
    scaledObject: byKind("ScaledObject"),
    hpa: hpaOn("Resource"),
    queueHpa: hpaOn("Object"),
  };
}

/** Applies the page's MiniCluster and waits until its one broker is up. */
async function startElastic(env: RealEnv): Promise<void> {
  await env.apply((await page()).miniCluster);
  await eventually(async () => {
    const out = await onLead(env, NAME, "flux resource list -s free -no '{nnodes}'\n");
    if (out.trim() !== "1") throw new Error(`not up: ${out}`);
  }, { timeoutMs: 120_000, intervalMs: 2000 });
}

const seconds = (t0: number) => ((performance.now() - t0) / 1000).toFixed(1);

interface PodMetrics {
  metadata: { name: string };
  containers: { name: string; usage: { cpu: string } }[];
}

/** A CPU quantity of the metrics API ("123456789n", "150m", "1") in millicores. */
function millicores(q: string): number {
  if (q.endsWith("n")) return Number(q.slice(0, -1)) / 1e6;
  if (q.endsWith("u")) return Number(q.slice(0, -1)) / 1e3;
  if (q.endsWith("m")) return Number(q.slice(0, -1));
  return Number(q) * 1000;
}

interface Hpa {
  status?: {
    currentReplicas?: number;
    desiredReplicas?: number;
    currentMetrics?: { resource?: { current?: { averageUtilization?: number } } }[];
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

async function hpa(name: string): Promise<Hpa> {
  return JSON.parse(
    await kubectl(["-n", REAL_NAMESPACE, "get", "hpa", name, "-o", "json"]),
  ) as Hpa;
}

async function size(env: RealEnv, name: string): Promise<number | undefined> {
  return (await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name)).spec?.size;
}

/**
 * Two jobs that each take a whole node, on an instance of one: the second waits in Flux's queue,
 * `scaler` grows the MiniCluster, the new broker joins and the second job runs there. (A single
 * job larger than the brokers up is not queued: Fluxion refuses it as unsatisfiable while the
 * other ranks are down, so it never asks for a size.) Resolves once both jobs completed.
 */
async function growsForWaitingJob(
  env: RealEnv,
  name: string,
  scaler: string,
  tag: string,
): Promise<void> {
  const t0 = performance.now();
  const [first, second] = (await onLead(
    env,
    name,
    "flux submit -N1 --exclusive sleep 60\nflux submit -N1 --exclusive sleep 20\n",
  )).trim().split("\n").map((l) => l.trim());
  await eventually(async () => {
    if (await size(env, name) !== 2) throw new Error(`${scaler} has not grown the MiniCluster`);
  }, { timeoutMs: 120_000, intervalMs: 2000 });
  console.error(`[${tag}] size 1 -> 2 ${seconds(t0)} s after the second job was queued`);
  for (const job of [first, second]) {
    await onLead(env, name, `flux job wait-event -t 150 ${job} clean\n`);
  }
  const results = await onLead(env, name, `flux jobs -no '{result} {ranks}' ${first} ${second}\n`);
  assert.deepEqual(
    results.trim().split("\n").map((l) => l.trim()).sort(),
    ["COMPLETED 0", "COMPLETED 1"],
    `each job ran on its own broker, the second on the one ${scaler} added`,
  );
}

/**
 * Nothing queued or running: back to one broker, and rank 1's pod gone. (The size goes down as
 * soon as the nodes allocated and asked for add up to 1: had the job on rank 1 still run then, the
 * drain would have kept its pod until it completed.)
 */
async function shrinksToOne(
  env: RealEnv,
  name: string,
  scaler: string,
  tag: string,
): Promise<void> {
  const t1 = performance.now();
  await eventually(async () => {
    if (await size(env, name) !== 1) throw new Error(`${scaler} has not shrunk the MiniCluster`);
  }, { timeoutMs: 120_000, intervalMs: 2000 });
  await eventually(async () => {
    const pods = await env.pods(name);
    if (pods.length !== 1) throw new Error(`${pods.length} pods`);
  }, { timeoutMs: 90_000, intervalMs: 1000 });
  console.error(`[${tag}] size 1 again, rank 1's pod gone ${seconds(t1)} s after the jobs ended`);
}

realTest(
  "real: the HorizontalPodAutoscaler grows a MiniCluster on its brokers' CPU and shrinks it back",
  async (env) => {
    const name = NAME;
    await startElastic(env);
    await kubectl(["apply", "-f", "-"], { stdin: JSON.stringify((await page()).hpa) });
    try {
      // A job that keeps one core busy on the lead broker: far above half of its 200m request.
      const t0 = performance.now();
      const burn = (await onLead(env, name, "flux submit -N1 sh -c 'while :; do :; done'\n"))
        .trim();
      const busy = await eventually(async () => {
        const out = await kubectl([
          "get",
          "--raw",
          `/apis/metrics.k8s.io/v1beta1/namespaces/${REAL_NAMESPACE}/pods`,
        ]);
        const items = (JSON.parse(out) as { items: PodMetrics[] }).items;
        const lead = items.find((p) => p.metadata.name.startsWith(`${name}-0-`));
        if (!lead) throw new Error("the lead broker's pod is not in the metrics API yet");
        const cpu = lead.containers.reduce((m, c) => m + millicores(c.usage.cpu), 0);
        if (cpu < 150) throw new Error(`the lead broker's pod uses ${cpu}m`);
        return cpu;
      }, { timeoutMs: 90_000, intervalMs: 2000 });
      console.error(
        `[hpa] metrics API: the lead broker uses ${busy.toFixed(0)}m (${seconds(t0)} s)`,
      );

      await eventually(async () => {
        if (await size(env, name) !== 2) throw new Error("the HPA has not grown the MiniCluster");
      }, { timeoutMs: 120_000, intervalMs: 2000 });
      console.error(`[hpa] size 1 -> 2 ${seconds(t0)} s after the job started`);
      // The new broker joined the running instance: two nodes, one of them running the job.
      await eventually(async () => {
        const out = await onLead(env, name, "flux resource list -no '{state} {nnodes}'\n");
        const nodes = Object.fromEntries(out.trim().split("\n").map((l) => l.trim().split(" ")));
        if (nodes.free !== "1" || nodes.allocated !== "1") {
          throw new Error(`want 1 free and 1 allocated node:\n${out}`);
        }
      }, { timeoutMs: 120_000, intervalMs: 2000 });
      const grown = await hpa(name);
      const active = grown.status?.conditions?.find((c) => c.type === "ScalingActive");
      assert.equal(active?.status, "True", `ScalingActive: ${JSON.stringify(active)}`);
      assert.ok(
        (grown.status?.currentMetrics?.[0]?.resource?.current?.averageUtilization ?? 0) > 50,
        `the HPA read the CPU: ${JSON.stringify(grown.status?.currentMetrics)}`,
      );

      // The job cancelled, the brokers idle: back to one.
      const t1 = performance.now();
      await onLead(env, name, `flux cancel ${burn}\n`);
      await eventually(async () => {
        if (await size(env, name) !== 1) throw new Error("the HPA has not shrunk the MiniCluster");
      }, { timeoutMs: 150_000, intervalMs: 2000 });
      await eventually(async () => {
        const pods = await env.pods(name);
        if (pods.length !== 1) throw new Error(`${pods.length} pods`);
      }, { timeoutMs: 60_000, intervalMs: 1000 });
      console.error(`[hpa] size 2 -> 1, rank 1's pod gone ${seconds(t1)} s after the cancel`);
      // The HPA's own status follows at its next sync (every 15 s).
      await eventually(async () => {
        const replicas = (await hpa(name)).status?.currentReplicas;
        if (replicas !== 1) throw new Error(`the HPA reads ${replicas} replicas`);
      }, { timeoutMs: 60_000, intervalMs: 2000 });
    } finally {
      await kubectl(["-n", REAL_NAMESPACE, "delete", "hpa", name, "--ignore-not-found"]);
    }
  },
  { timeoutMs: 480_000, ignore: !metricsServerAvailable() },
);

realTest(
  "real: KEDA grows a MiniCluster when a job waits in its Flux queue, and shrinks it after",
  async (env) => {
    const name = NAME;
    await startElastic(env);
    await kubectl(["apply", "-f", "-"], { stdin: JSON.stringify((await page()).scaledObject) });
    try {
      await eventually(async () => {
        const out = await kubectl([
          "-n",
          REAL_NAMESPACE,
          "get",
          "scaledobject",
          name,
          "-o",
          "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
        ]);
        if (out.trim() !== "True") throw new Error(`the ScaledObject is not Ready: ${out}`);
      }, { timeoutMs: 90_000, intervalMs: 2000 });

      const t0 = performance.now();
      await growsForWaitingJob(env, name, "KEDA", "keda");
      console.error(`[keda] both jobs completed ${seconds(t0)} s after they were submitted`);

      await shrinksToOne(env, name, "KEDA", "keda");
      await eventually(async () => {
        const replicas = (await hpa(`keda-hpa-${name}`)).status?.currentReplicas;
        if (replicas !== 1) throw new Error(`the HPA KEDA made reads ${replicas} replicas`);
      }, { timeoutMs: 60_000, intervalMs: 2000 });
    } finally {
      await kubectl(["-n", REAL_NAMESPACE, "delete", "scaledobject", name, "--ignore-not-found"]);
    }
  },
  { timeoutMs: 480_000, ignore: !kedaAvailable() },
);

realTest(
  "real: the HorizontalPodAutoscaler alone grows a MiniCluster on the queue the operator serves as custom metrics",
  async (env) => {
    const name = NAME;
    const metricPath = (metric: string) =>
      `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${REAL_NAMESPACE}/` +
      `miniclusters.flux-framework.org/${name}/${metric}`;
    const metric = async (metric: string) =>
      Number(
        (JSON.parse(await kubectl(["get", "--raw", metricPath(metric)])) as {
          items: { value: string }[];
        }).items[0].value,
      );
    await startElastic(env);
    // Served through the aggregation layer as soon as the queue is observed.
    await eventually(async () => {
      if (await metric("flux_nodes_free") !== 1) throw new Error("1 node free not served yet");
    }, { timeoutMs: 60_000, intervalMs: 2000 });
    const forbidden = await kubectl([
      "get",
      "--raw",
      metricPath("flux_nodes_wanted"),
      `--as=system:serviceaccount:${REAL_NAMESPACE}:default`,
    ]).then(() => "read", (e: Error) => e.message);
    assert.match(forbidden, /forbidden/i, "a tenant's ServiceAccount without RBAC reads nothing");
    await kubectl(["apply", "-f", "-"], { stdin: JSON.stringify((await page()).queueHpa) });
    try {
      await growsForWaitingJob(env, name, "the HPA", "hpa-queue");
      const grown = await hpa(name);
      const active = grown.status?.conditions?.find((c) => c.type === "ScalingActive");
      assert.equal(active?.status, "True", `ScalingActive: ${JSON.stringify(active)}`);

      await shrinksToOne(env, name, "the HPA", "hpa-queue");
      // Nothing allocated, nothing asked for, once the next report is in the status.
      await eventually(async () => {
        const wanted = await metric("flux_nodes_wanted");
        if (wanted !== 0) throw new Error(`flux_nodes_wanted is ${wanted}`);
      }, { timeoutMs: 60_000, intervalMs: 2000 });
    } finally {
      await kubectl(["-n", REAL_NAMESPACE, "delete", "hpa", name, "--ignore-not-found"]);
    }
  },
  { timeoutMs: 480_000 },
);
