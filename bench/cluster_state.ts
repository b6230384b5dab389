/**
 * What the benchmark does to and reads from its cluster besides the runs themselves: the
 * MiniCluster it creates, namespaces, enough fake nodes for the pods, and counting pods and Ready
 * pods.
 */
import type { KubeClient } from "../runtime/client/client.ts";
import { isAlreadyExists } from "../runtime/client/errors.ts";
import { Jobs, Namespaces, Nodes, Pods, ServiceAccounts } from "../runtime/client/resources.ts";
import { MANAGED_SELECTOR } from "../controllers/minicluster/controller.ts";
import { fakeNode, fakeNodeName } from "../hack/cluster/nodes.ts";
import { KEEP_RUNNING_ANNOTATION } from "../hack/cluster/kwok_stages.ts";
import type { MiniCluster } from "../api/mod.ts";
import { sampleMiniCluster } from "../testing/sample_minicluster.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The MiniCluster every bench run creates: the sample, `size` pods that KWOK keeps Running (a
 * finished Job would take its pods out of the Ready count and the operator's steady state).
 */
export function benchMiniCluster(name: string, namespace: string, size: number): MiniCluster {
  return sampleMiniCluster(name, namespace, {
    size,
    pod: { annotations: { [KEEP_RUNNING_ANNOTATION]: "true" } },
  });
}

export async function createNamespace(client: KubeClient, name: string): Promise<void> {
  await client.create(Namespaces, {
    metadata: { name, labels: { "minicluster.flux-framework.org/bench": "true" } },
  });
  await client.create(ServiceAccounts, { metadata: { name: "default", namespace: name } })
    .catch((e) => {
      if (!isAlreadyExists(e)) throw e;
    });
}

/** Makes sure `count` fake KWOK nodes exist and are Ready (pods need room: 110 per node). */
export async function ensureNodes(client: KubeClient, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await client.create(Nodes, fakeNode(i)).catch((e) => {
      if (!isAlreadyExists(e)) throw e;
    });
  }
  const deadline = Date.now() + 120_000;
  for (;;) {
    const list = await client.list<
      { metadata?: { name?: string }; status?: { conditions?: { type: string; status: string }[] } }
    >(Nodes);
    const ready = new Set(
      list.items.filter((n) =>
        n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
      ).map((n) => n.metadata?.name),
    );
    const missing = Array.from({ length: count }, (_, i) => fakeNodeName(i)).filter((n) =>
      !ready.has(n)
    );
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`nodes not Ready: ${missing.join(", ")}`);
    await sleep(500);
  }
}

/** Runs `fn` over `items` with `concurrency` workers. */
export async function pool<T>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
}

export async function countPods(client: KubeClient, namespace: string): Promise<number> {
  let total = 0;
  let cont: string | undefined;
  do {
    const page = await client.list(Pods, {
      namespace,
      labelSelector: MANAGED_SELECTOR,
      limit: 2000,
      continue: cont,
    });
    total += page.items.length;
    cont = page.metadata.continue || undefined;
  } while (cont);
  return total;
}

/** Waits until the Jobs of `namespace` have `pods` Ready pods in all. */
export async function waitPodsReady(
  client: KubeClient,
  namespace: string,
  pods: number,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const jobs = await client.listAll<{ status?: { ready?: number } }>(Jobs, {
      namespace,
      labelSelector: MANAGED_SELECTOR,
      limit: 500,
    });
    const ready = jobs.items.reduce((a, j) => a + (j.status?.ready ?? 0), 0);
    if (ready >= pods) return;
    if (Date.now() > deadline) throw new Error(`${namespace}: ${ready}/${pods} pods Ready`);
    await sleep(2000);
  }
}
