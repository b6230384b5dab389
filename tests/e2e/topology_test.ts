// MiniClusters placed by topology: the real Kueue's Topology Aware Scheduling (beta and on by
// default since v0.14) on KWOK nodes in two blocks of two racks of two nodes. Each scenario makes
// its own eight nodes (tainted, so that only its own admitted pods land there: the ResourceFlavor
// carries the toleration), a Topology of block → rack → host and a ResourceFlavor naming it. The
// brokers ask for 3 of a node's 4 CPUs, so one broker fits a node. Where the pods landed is read
// from the pods and the nodes' labels; why one waits, from the MiniCluster's conditions.

import assert from "node:assert/strict";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { kubectl as kubectlAt } from "../../hack/kubectl.ts";
import { FAKE_NODE_ANNOTATION } from "../../hack/cluster/components.ts";
import { MiniClusters } from "../../api/resource.ts";
import type { MiniCluster } from "../../api/mod.ts";
import type { TestEnv } from "../harness.ts";
import {
  conditionOf,
  type E2EEnv,
  e2eTest,
  eventually,
  KEEP_RUNNING,
  miniCluster,
  podsOf,
  waitForCondition,
} from "./env.ts";
import { kueueAvailable, LOCAL_QUEUE, makeQueues, QUEUED } from "./kueue_env.ts";

const BLOCK = "topology.minicluster.local/block";
const RACK = "topology.minicluster.local/rack";
const HOST = "kubernetes.io/hostname";
const INDEX = "batch.kubernetes.io/job-completion-index";
/** The label and taint that keep a scenario's nodes its own. */
const SCENARIO_NODE = "topology.minicluster.local/scenario";

/** The scenario's nodes: block b<i>, rack b<i>-r<j>, two hosts each, 4 CPUs. */
function topologyNodes(env: TestEnv): Node[] {
  const nodes: Node[] = [];
  const resources = { cpu: "4", memory: "16Gi", pods: "110" };
  for (const b of [0, 1]) {
    for (const r of [0, 1]) {
      for (const h of [0, 1]) {
        const name = `${env.namespace}-b${b}-r${r}-h${h}`;
        nodes.push({
          apiVersion: "v1",
          kind: "Node",
          metadata: {
            name,
            annotations: { [FAKE_NODE_ANNOTATION]: "fake" },
            labels: {
              [HOST]: name,
              [BLOCK]: `b${b}`,
              [RACK]: `b${b}-r${r}`,
              [SCENARIO_NODE]: env.namespace,
              "kubernetes.io/os": "linux",
              type: "kwok",
            },
          },
          spec: { taints: [{ key: SCENARIO_NODE, value: env.namespace, effect: "NoSchedule" }] },
          status: { allocatable: resources, capacity: resources },
        });
      }
    }
  }
  return nodes;
}

/** The scenario's Topology: block → rack → host. */
const topologyName = (env: TestEnv) => `${env.namespace}-tas`;

/** Registers a scenario with its nodes, Topology and queues (all removed afterwards). */
function topologyTest(name: string, fn: (env: E2EEnv) => Promise<void>): void {
  e2eTest(name, async (env) => {
    const topology = {
      apiVersion: "kueue.x-k8s.io/v1beta2",
      kind: "Topology",
      metadata: { name: topologyName(env) },
      spec: { levels: [{ nodeLabel: BLOCK }, { nodeLabel: RACK }, { nodeLabel: HOST }] },
    };
    await kubectlAt(
      env.kubeconfig,
      ["apply", "-f", "-"],
      [...topologyNodes(env), topology].map((o) => JSON.stringify(o)).join("\n"),
    );
    // A flavor on the scenario's nodes that names the Topology and tolerates the nodes' taint
    // (Kueue adds a flavor's tolerations to the pods it admits).
    const dropQueues = await makeQueues(env, {
      cpu: 64,
      nodeLabels: { [SCENARIO_NODE]: env.namespace },
      topologyName: topologyName(env),
      tolerations: [{
        key: SCENARIO_NODE,
        operator: "Equal",
        value: env.namespace,
        effect: "NoSchedule",
      }],
    });
    try {
      await fn(env);
    } finally {
      await dropQueues();
      await kubectlAt(env.kubeconfig, [
        "delete",
        "--ignore-not-found",
        "--wait=false",
        `topology.kueue.x-k8s.io/${topologyName(env)}`,
      ]);
      await kubectlAt(env.kubeconfig, [
        "delete",
        "--ignore-not-found",
        "--wait=false",
        "nodes",
        "-l",
        `${SCENARIO_NODE}=${env.namespace}`,
      ]);
    }
  }, { timeoutMs: 120_000, ignore: !kueueAvailable() });
}

/** A queued MiniCluster of `size` brokers of 3 CPUs each, with pod annotations `annotations`. */
function placed(
  env: TestEnv,
  name: string,
  size: number,
  annotations: Record<string, string>,
  spec: Partial<MiniCluster["spec"]> = {},
): MiniCluster {
  const mc = miniCluster(name, env.namespace, {
    size,
    jobLabels: QUEUED,
    pod: { annotations: { ...KEEP_RUNNING, ...annotations } },
    ...spec,
  });
  mc.spec!.containers = mc.spec!.containers.map((c) => ({
    ...c,
    resources: { requests: { cpu: 3, memory: "64Mi" } },
  }));
  return mc;
}

interface Placement {
  rank: number;
  node: string;
  block: string;
  rack: string;
}

/** Waits until `count` pods of `name` run and are Ready (on the scenario's nodes, by Kueue). */
async function waitForPlaced(env: TestEnv, name: string, count: number): Promise<void> {
  await eventually(async () => {
    const ready = (await podsOf(env, name)).filter((p) =>
      !p.metadata?.deletionTimestamp && p.status?.phase === "Running" &&
      p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True")
    );
    if (ready.length !== count) throw new Error(`${name}: ${ready.length} of ${count} pods run`);
  }, { timeoutMs: 60_000, intervalMs: 500 });
}

/** Each running pod's rank (completion index) and where it landed, by rank. */
async function placements(env: TestEnv, name: string): Promise<Placement[]> {
  const nodes = new Map(topologyNodes(env).map((n) => [n.metadata!.name!, n.metadata!.labels!]));
  return (await podsOf(env, name))
    .filter((p: Pod) => !p.metadata?.deletionTimestamp)
    .map((p: Pod) => {
      const node = p.spec?.nodeName ?? "";
      const labels = nodes.get(node);
      assert.ok(labels, `${p.metadata?.name} runs on ${node}, not a node of the scenario`);
      return {
        rank: Number(p.metadata?.labels?.[INDEX]),
        node,
        block: labels[BLOCK],
        rack: labels[RACK],
      };
    })
    .sort((a, b) => a.rank - b.rank);
}

topologyTest(
  "e2e topology: a MiniCluster that requires one block lands in one, its consecutive ranks on neighbouring nodes",
  async (env) => {
    await env.startOperator();
    await env.client.create(
      MiniClusters,
      placed(env, "block", 3, { "kueue.x-k8s.io/podset-required-topology": BLOCK }),
    );
    await waitForPlaced(env, "block", 3);
    const where = await placements(env, "block");
    console.error(`[topology] ${where.map((p) => `${p.rank}:${p.rack}/${p.node}`).join(" ")}`);
    assert.deepEqual(where.map((p) => p.rank), [0, 1, 2]);
    assert.equal(new Set(where.map((p) => p.block)).size, 1, "every broker in one block");
    assert.equal(new Set(where.map((p) => p.node)).size, 3, "one broker per node");
    // Kueue orders a Job's pods by completion index over its nodes in topology order: the ranks
    // follow the racks and hosts (so does Flux's hostlist, which is in rank order), and three
    // brokers of one per node take two racks, the fewest they fit.
    const inOrder = where.map((p) => p.node);
    assert.deepEqual(inOrder, [...inOrder].sort(), "ranks in the order of racks and hosts");
    assert.equal(new Set(where.map((p) => p.rack)).size, 2, "two racks");
  },
);

topologyTest(
  "e2e topology: a MiniCluster too large for the block it requires waits, and says so",
  async (env) => {
    await env.startOperator();
    await env.client.create(
      MiniClusters,
      placed(env, "large", 5, { "kueue.x-k8s.io/podset-required-topology": BLOCK }),
    );
    const mc = await waitForCondition(env, "large", "Suspended", {
      status: "True",
      reason: "WaitingForAdmission",
    }, 60_000);
    const message = conditionOf(mc, "Suspended")!.message ?? "";
    console.error(`[topology] ${message}`);
    assert.match(message, new RegExp(`queue ${LOCAL_QUEUE}`));
    assert.match(message, /topology/i, "the status names the topology as the reason");
    assert.deepEqual(await podsOf(env, "large"), [], "no broker runs");
  },
);

topologyTest(
  "e2e topology: a MiniCluster that prefers one block spreads over as few as it can",
  async (env) => {
    await env.startOperator();
    await env.client.create(
      MiniClusters,
      placed(env, "spread", 5, { "kueue.x-k8s.io/podset-preferred-topology": BLOCK }),
    );
    await waitForPlaced(env, "spread", 5);
    const where = await placements(env, "spread");
    console.error(`[topology] ${where.map((p) => `${p.rank}:${p.rack}/${p.node}`).join(" ")}`);
    const perBlock = Object.values(
      Object.groupBy(where, (p) => p.block) as Record<string, Placement[]>,
    ).map((ps) => ps.length).sort();
    assert.deepEqual(perBlock, [1, 4], "a full block and one broker in the other");
  },
);

topologyTest(
  "e2e topology: a ganged MiniCluster placed in one block runs as one gang",
  async (env) => {
    await env.startOperator();
    await env.client.create(
      MiniClusters,
      placed(env, "gang", 3, { "kueue.x-k8s.io/podset-required-topology": BLOCK }, { gang: {} }),
    );
    await waitForPlaced(env, "gang", 3);
    await waitForCondition(env, "gang", "GangScheduling", { status: "True", reason: "Scheduled" });
    const where = await placements(env, "gang");
    assert.equal(new Set(where.map((p) => p.block)).size, 1, "every broker in one block");
  },
);
