// Gang scheduling with the real Job controller and kube-scheduler on KWOK nodes (needs Kubernetes
// 1.37 with gang scheduling on, see testing/gang_cluster.ts; on any other cluster the scenario
// fails saying so). On nodes of its own that hold two of a MiniCluster's three pods (CPU
// requested per pod): a ganged MiniCluster binds none of its pods and its status surfaces the
// PodGroup's condition; an unganged one beside it binds what fits; once nodes are added, the ganged
// one binds all its pods together. And a ganged MiniCluster scaled up and down: the PodGroup's
// minCount follows, the added pods join the gang.
import assert from "node:assert/strict";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { Nodes } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { fakeNode } from "../../hack/cluster/nodes.ts";
import type { PodGroup } from "../../controllers/minicluster/children/gang.ts";
import { INITIALLY_SCHEDULED, PodGroups } from "../../controllers/minicluster/gang/pod_group.ts";
import { gangScheduling, gangsNeeded, servesGangs } from "../../testing/gang_cluster.ts";
import {
  conditionOf,
  e2eTest,
  eventsOf,
  eventually,
  getMiniCluster,
  KEEP_RUNNING,
  miniCluster,
  podsOf,
  waitForCondition,
  waitForRunningPods,
} from "./env.ts";

/** Each node holds one pod: 2 CPUs, pods request 1.5. */
const NODE_CPU = "2";
const POD_CPU = "1500m";
const SIZE = 3;

const bound = (pods: Pod[]) => pods.filter((p) => p.spec?.nodeName);

/** A KWOK node only this scenario's pods may use (tainted for and labelled with its namespace). */
function scenarioNode(namespace: string, i: number): Node {
  const base = fakeNode(0) as unknown as Node;
  const name = `kwok-node-gang-${namespace.slice(-6)}-${i}`;
  const resources = { ...base.status!.capacity, cpu: NODE_CPU };
  return {
    ...base,
    metadata: {
      ...base.metadata,
      name,
      labels: { ...base.metadata!.labels, "kubernetes.io/hostname": name, "gang-test": namespace },
    },
    spec: { taints: [{ key: "gang-test", value: namespace, effect: "NoSchedule" }] },
    status: { capacity: resources, allocatable: resources },
  };
}

e2eTest("e2e gang: none of a gang is bound until all fit, then all together", async (env) => {
  const cluster = await gangScheduling(env.kubeconfig);
  if (!servesGangs(cluster)) throw new Error(gangsNeeded(cluster));
  const nodes: string[] = [];
  const addNodes = async (from: number, count: number) => {
    for (let i = from; i < from + count; i++) {
      const node = await env.client.create<Node>(Nodes, scenarioNode(env.namespace, i));
      nodes.push(node.metadata!.name!);
    }
  };
  const mc = (name: string, spec: Record<string, unknown>) =>
    miniCluster(name, env.namespace, {
      size: SIZE,
      pod: {
        annotations: KEEP_RUNNING,
        nodeSelector: { "gang-test": env.namespace },
        tolerations: [{ key: "gang-test", operator: "Equal", value: env.namespace }],
      },
      containers: [{
        image: "ghcr.io/rse-ops/accounting:app-latest",
        command: "hostname",
        resources: { requests: { cpu: POD_CPU } },
      }],
      ...spec,
    });
  try {
    await addNodes(0, 2);
    await env.startOperator();

    // The ganged one first: two nodes for three pods, so none is bound.
    await env.client.create(MiniClusters, mc("ganged", { gang: {} }));
    const held = await waitForCondition(env, "ganged", "GangScheduling", {
      status: "False",
      reason: "Unschedulable",
    });
    assert.match(
      conditionOf(held, "GangScheduling")!.message!,
      /minCount \(3\) cannot be satisfied/,
    );
    // The Job, the scheduler and the status (whose message-only changes are paced) each move on
    // their own time: read together until they agree.
    await eventually(async () => {
      const pods = await podsOf(env, "ganged");
      assert.equal(pods.length, SIZE, "the Job made every pod");
      assert.deepEqual(bound(pods).map((p) => p.metadata?.name), [], "none bound");
      // The pods name the MiniCluster's PodGroup, and the status carries its condition as the
      // scheduler wrote it.
      for (const p of pods) {
        const group = (p.spec as { schedulingGroup?: { podGroupName?: string } }).schedulingGroup;
        assert.equal(group?.podGroupName, "ganged");
      }
      const group = await env.client.get<PodGroup>(PodGroups, env.namespace, "ganged");
      const scheduled = group.status?.conditions?.find((c) => c.type === INITIALLY_SCHEDULED);
      assert.equal(scheduled?.status, "False");
      const surfaced = conditionOf(await getMiniCluster(env, "ganged"), "GangScheduling")!;
      assert.equal(surfaced.message, `PodGroup ganged: ${scheduled?.message}`);
    }, { timeoutMs: 20_000, intervalMs: 500 });
    const warned = await eventually(async () => {
      const e = (await eventsOf(env, "ganged")).find((e) => e.reason === "Unschedulable");
      if (!e) throw new Error("no Unschedulable Event yet");
      return e;
    });
    assert.equal(warned.type, "Warning");

    // The unganged one beside it binds what fits (two pods), and holds both nodes for nothing.
    await env.client.create(MiniClusters, mc("plain", {}));
    const plain = await eventually(async () => {
      const p = await podsOf(env, "plain");
      if (bound(p).length !== 2) throw new Error(`plain: ${bound(p).length} pods bound`);
      return p;
    }, { timeoutMs: 45_000, intervalMs: 250 });
    assert.equal(plain.length, SIZE);
    assert.equal(conditionOf(await getMiniCluster(env, "plain"), "GangScheduling"), undefined);
    assert.deepEqual(bound(await podsOf(env, "ganged")), [], "the gang still holds nothing");

    // Room for both: the gang's three pods are bound together, the unganged one's last pod too.
    await addNodes(2, 4);
    const running = await waitForRunningPods(env, "ganged", SIZE, 60_000);
    await waitForRunningPods(env, "plain", SIZE, 60_000);
    const times = running.map((p) =>
      Date.parse(
        p.status!.conditions!.find((c) => c.type === "PodScheduled" && c.status === "True")!
          .lastTransitionTime!,
      )
    );
    assert.ok(
      Math.max(...times) - Math.min(...times) <= 5_000,
      `bound in one scheduling cycle, not one by one: ${
        times.map((t) => new Date(t).toISOString())
      }`,
    );
    await waitForCondition(env, "ganged", "GangScheduling", {
      status: "True",
      reason: "Scheduled",
    });
    const after = await env.client.get<PodGroup>(PodGroups, env.namespace, "ganged");
    const placed = after.status?.conditions?.find((c) => c.type === INITIALLY_SCHEDULED);
    assert.equal(placed?.status, "True", JSON.stringify(after.status));
    await waitForCondition(env, "ganged", "Ready", { status: "True", reason: "PodsReady" });
  } finally {
    for (const name of nodes) await env.client.delete(Nodes, undefined, name).catch(() => {});
  }
}, { timeoutMs: 180_000 });

e2eTest(
  "e2e gang: scaling moves the PodGroup's minCount; added pods join the gang",
  async (env) => {
    const cluster = await gangScheduling(env.kubeconfig);
    if (!servesGangs(cluster)) throw new Error(gangsNeeded(cluster));
    await env.startOperator();
    await env.client.create(
      MiniClusters,
      miniCluster("elastic", env.namespace, {
        size: 2,
        maxSize: 4,
        gang: {},
        pod: { annotations: KEEP_RUNNING },
      }),
    );
    const minCount = async () =>
      (await env.client.get<PodGroup>(PodGroups, env.namespace, "elastic")).spec?.schedulingPolicy
        ?.gang?.minCount;
    await waitForRunningPods(env, "elastic", 2);
    assert.equal(await minCount(), 2);
    await env.client.patch(MiniClusters, env.namespace, "elastic", { spec: { size: 4 } }, "merge");
    await waitForRunningPods(env, "elastic", 4);
    assert.equal(await minCount(), 4);
    for (const p of await podsOf(env, "elastic")) {
      const group = (p.spec as { schedulingGroup?: { podGroupName?: string } }).schedulingGroup;
      assert.equal(group?.podGroupName, "elastic", `${p.metadata?.name} is in the gang`);
    }
    await env.client.patch(MiniClusters, env.namespace, "elastic", { spec: { size: 1 } }, "merge");
    await waitForRunningPods(env, "elastic", 1);
    await eventually(async () => assert.equal(await minCount(), 1));
    await waitForCondition(env, "elastic", "GangScheduling", {
      status: "True",
      reason: "Scheduled",
    });
  },
  { timeoutMs: 120_000 },
);
