/**
 * What turns a MiniCluster into broker pods on the real nodes, three ways, for `bench --real`:
 * this operator (a local process watching the bench's namespace), the Go Flux Operator (built from
 * `../shared/peers/`, its own CRD installed in place of ours) and the floor: the children this
 * operator would render for the same MiniCluster (`render`), created directly, with no operator
 * running. The floor's pods are the same pods, so its times are what the kubelets, the Job
 * controller and Flux take without any operator.
 */
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import {
  ConfigMaps,
  Jobs,
  type ResourceType,
  Secrets,
  Services,
} from "../../runtime/client/resources.ts";
import { renderChildren } from "../../controllers/minicluster/render/render.ts";
import { installCrd } from "../../hack/conformance/run.ts";
import { installCrds } from "../../testing/crds.ts";
import { goOperator, ours } from "../peer/contenders.ts";

export type RealContenderName = "ours" | "go" | "floor";
export const REAL_CONTENDERS: readonly RealContenderName[] = ["ours", "go", "floor"];

export interface RealContender {
  name: RealContenderName;
  /** Creates what makes the pods (the MiniCluster, or the floor's children). */
  create(mc: MiniCluster): Promise<void>;
  /** Deletes it; resolves once the object is gone (its pods are waited for by the caller). */
  remove(mc: MiniCluster): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function deleteIfThere(
  client: KubeClient,
  rt: ResourceType,
  namespace: string,
  name: string,
): Promise<void> {
  await client.delete(rt, namespace, name, { propagationPolicy: "Background" }).catch((e) => {
    if (!isNotFound(e)) throw e;
  });
}

/** Deletes a MiniCluster and waits until the object is gone (its finalizer off, for ours). */
async function deleteMiniCluster(client: KubeClient, mc: MiniCluster): Promise<void> {
  const { namespace, name } = mc.metadata as { namespace: string; name: string };
  await deleteIfThere(client, MiniClusters, namespace, name);
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const gone = await client.get(MiniClusters, namespace, name).then(() => false, (e) => {
      if (isNotFound(e)) return true;
      throw e;
    });
    if (gone) return;
    await sleep(500);
  }
  throw new Error(`${name}: the MiniCluster is still there 180 s after its delete`);
}

/**
 * The Go operator reconciles every namespace: a MiniCluster elsewhere (the demo's, say) would be
 * rewritten by it while the bench runs.
 */
async function refuseOtherMiniClusters(client: KubeClient, namespace: string): Promise<void> {
  const all = await client.list<MiniCluster>(MiniClusters);
  const others = all.items.filter((mc) => mc.metadata?.namespace !== namespace);
  if (others.length > 0) {
    const names = others.map((mc) => `${mc.metadata?.namespace}/${mc.metadata?.name}`);
    throw new Error(
      `the Go operator would reconcile every MiniCluster of the cluster; delete these first ` +
        `(or stop what owns them): ${names.join(", ")}`,
    );
  }
}

export async function startRealContender(
  name: RealContenderName,
  kubeconfig: string,
  namespace: string,
  logDir: string,
): Promise<RealContender> {
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  if (name === "ours" || name === "go") {
    if (name === "go") await refuseOtherMiniClusters(client, namespace);
    // The operators as the peer bench starts them. Ours: no children count (only the peer bench's
    // observer reads it) and concurrency 0, which passes no --concurrency (the operator's default).
    const operator = name === "ours" ? ours(0, 0, false) : await goOperator();
    for (const crd of [operator.crd].flat()) await installCrd(client, crd);
    const running = await operator.start(kubeconfig, namespace, logDir);
    return {
      name,
      create: async (mc) => void await client.create(MiniClusters, mc),
      remove: (mc) => deleteMiniCluster(client, mc),
      stop: async () => {
        await running.stop();
        // Our CRDs again after the Go operator's, for whatever runs next on this cluster.
        if (name === "go") await installCrds(kubeconfig);
        client.close();
      },
    };
  }
  const kinds: Record<string, ResourceType> = {
    Secret: Secrets,
    ConfigMap: ConfigMaps,
    Service: Services,
    Job: Jobs,
  };
  const rendered = new Map<string, { rt: ResourceType; obj: { metadata: { name: string } } }[]>();
  return {
    name,
    async create(mc) {
      const objects: { rt: ResourceType; obj: { metadata: { name: string } } }[] = [];
      for (const child of await renderChildren(mc, { withSecrets: true })) {
        const obj = child as { kind: string; metadata: Record<string, unknown> & { name: string } };
        // The workspace is the operator's memory, not something a pod reads.
        const rt = kinds[obj.kind];
        if (!rt) continue;
        delete obj.metadata.ownerReferences;
        objects.push({ rt, obj });
      }
      rendered.set(mc.metadata!.name!, objects);
      for (const { rt, obj } of objects) await client.create(rt, obj);
    },
    async remove(mc) {
      const ns = mc.metadata!.namespace!;
      for (const { rt, obj } of (rendered.get(mc.metadata!.name!) ?? []).reverse()) {
        await deleteIfThere(client, rt, ns, obj.metadata.name);
      }
      // The Job's pods go after it (Background): the caller waits for them.
      rendered.delete(mc.metadata!.name!);
    },
    stop: () => Promise.resolve(client.close()),
  };
}
