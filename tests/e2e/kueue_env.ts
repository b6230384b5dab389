// Queues of the real Kueue for the e2e scenarios (tests/e2e/kueue_test.ts): a ResourceFlavor that
// puts admitted pods on the KWOK nodes, a ClusterQueue with the scenario's CPU quota and a
// LocalQueue `lq` in the scenario's namespace. Cluster-scoped objects are named after the
// namespace, so scenarios never share a queue.
//
// Which cluster has Kueue: $MC_KUBECONFIG with MC_KUEUE=1 (`deno task test` installs it with the
// real nodes), else .cluster/ when `deno task cluster up --real-nodes 1 --kueue` made it. Without
// Kueue the scenarios are ignored; `deno task test` always has it and fails when it cannot.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { kubectl } from "../../hack/kubectl.ts";
import assert from "node:assert/strict";
import type { TestEnv } from "../harness.ts";
import { sumOf, WRITE_VERBS } from "../../testing/metrics_text.ts";
import type { OperatorProcess } from "../../testing/operator_process.ts";
import { type E2EEnv, e2eTest, podsOf } from "./env.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Decided without IO at registration time. */
export function kueueAvailable(): boolean {
  if (Deno.env.get("MC_KUBECONFIG")) return Deno.env.get("MC_KUEUE") === "1";
  try {
    return JSON.parse(Deno.readTextFileSync(join(ROOT, ".cluster", "state.json"))).kueue !==
      undefined;
  } catch {
    return false;
  }
}

export const LOCAL_QUEUE = "lq";
/** What the MiniClusters of the scenarios carry in spec.jobLabels (Kueue's documented way). */
export const QUEUED = { "kueue.x-k8s.io/queue-name": LOCAL_QUEUE };
/** The ResourceFlavor's node label: Kueue injects it into the admitted Job's pod template. */
export const FLAVOR_NODE_LABELS = { type: "kwok" };

export interface QueueOptions {
  /** The ClusterQueue's CPU quota. */
  cpu: number;
  /** Preempt lower-priority Workloads of the same ClusterQueue. */
  preemption?: boolean;
  /** PriorityClasses to make (name → value), deleted with the queues. */
  priorities?: Record<string, number>;
  /** The flavor's node labels (default: the KWOK nodes'). */
  nodeLabels?: Record<string, string>;
  /** The flavor's Topology (Topology Aware Scheduling) and the tolerations it adds to pods. */
  topologyName?: string;
  tolerations?: Record<string, string>[];
  /**
   * The LocalQueue's name (default `lq`). `default` makes Kueue queue every new Job of the
   * namespace, labelled or not (LocalQueueDefaulting, on in Kueue v0.17).
   */
  localQueue?: string;
}

/** The ClusterQueue of a scenario (its namespace's name). */
export const clusterQueueOf = (env: TestEnv) => env.namespace;

/** Makes the scenario's queues; returns what deletes them. */
export async function makeQueues(env: TestEnv, opts: QueueOptions): Promise<() => Promise<void>> {
  const name = clusterQueueOf(env);
  const priorities = Object.entries(opts.priorities ?? {}).map(([pc, value]) => ({
    apiVersion: "scheduling.k8s.io/v1",
    kind: "PriorityClass",
    metadata: { name: `${name}-${pc}` },
    value,
  }));
  const objects = [
    {
      apiVersion: "kueue.x-k8s.io/v1beta2",
      kind: "ResourceFlavor",
      metadata: { name },
      spec: {
        nodeLabels: opts.nodeLabels ?? FLAVOR_NODE_LABELS,
        ...(opts.topologyName ? { topologyName: opts.topologyName } : {}),
        ...(opts.tolerations ? { tolerations: opts.tolerations } : {}),
      },
    },
    {
      apiVersion: "kueue.x-k8s.io/v1beta2",
      kind: "ClusterQueue",
      metadata: { name },
      spec: {
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": env.namespace } },
        ...(opts.preemption ? { preemption: { withinClusterQueue: "LowerPriority" } } : {}),
        resourceGroups: [{
          coveredResources: ["cpu", "memory"],
          flavors: [{
            name,
            resources: [
              { name: "cpu", nominalQuota: opts.cpu },
              { name: "memory", nominalQuota: "64Gi" },
            ],
          }],
        }],
      },
    },
    {
      apiVersion: "kueue.x-k8s.io/v1beta2",
      kind: "LocalQueue",
      metadata: { name: opts.localQueue ?? LOCAL_QUEUE, namespace: env.namespace },
      spec: { clusterQueue: name },
    },
    ...priorities,
  ];
  await kubectl(
    env.kubeconfig,
    ["apply", "-f", "-"],
    objects.map((o) => JSON.stringify(o)).join("\n"),
  );
  return async () => {
    const names = [
      `clusterqueue.kueue.x-k8s.io/${name}`,
      `resourceflavor.kueue.x-k8s.io/${name}`,
      ...priorities.map((p) => `priorityclass.scheduling.k8s.io/${p.metadata.name}`),
    ];
    await kubectl(env.kubeconfig, ["delete", "--ignore-not-found", "--wait=false", ...names]);
  };
}

/** A PriorityClass of the scenario, by the short name given to makeQueues. */
export const priorityClass = (env: TestEnv, short: string) => `${clusterQueueOf(env)}-${short}`;

export interface KueueWorkload {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { active?: boolean };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

/** The Workloads Kueue made for the Job `job` (by its job-uid label). */
export async function workloadsOf(env: TestEnv, jobUid: string): Promise<KueueWorkload[]> {
  const out = await kubectl(env.kubeconfig, [
    "get",
    "workloads.kueue.x-k8s.io",
    "--namespace",
    env.namespace,
    "-l",
    `kueue.x-k8s.io/job-uid=${jobUid}`,
    "-o",
    "json",
  ]);
  return JSON.parse(out).items;
}

/** A Workload's condition `type` when it is True. */
export function workloadCondition(wl: KueueWorkload, type: string) {
  return wl.status?.conditions?.find((c) => c.type === type && c.status === "True");
}

/**
 * Registers a scenario with its own queues and an operator watching its namespace; the queues go
 * afterwards, also on failure. Ignored where the cluster has no Kueue (kueueAvailable).
 */
export function kueueTest(
  name: string,
  queues: QueueOptions,
  fn: (env: E2EEnv, op: OperatorProcess) => Promise<void>,
  timeoutMs: number,
): void {
  e2eTest(name, async (env) => {
    const dropQueues = await makeQueues(env, queues);
    try {
      await fn(env, await env.startOperator());
    } finally {
      await dropQueues();
    }
  }, { timeoutMs, ignore: !kueueAvailable() });
}

/** The operator's writes to Jobs so far (its own api_requests_total). */
export async function jobWrites(op: OperatorProcess): Promise<number> {
  return sumOf(await op.metrics(), "api_requests_total", {
    verb: WRITE_VERBS,
    resource: "jobs.batch",
  });
}

/** No pod of `name` exists for `ms` (checked every 250 ms). */
export async function staysWithoutPods(env: TestEnv, name: string, ms: number) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const pods = (await podsOf(env, name)).map((p) => p.metadata?.name);
    assert.deepEqual(pods, [], `${name} has pods while Kueue has not admitted it`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
