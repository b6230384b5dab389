/**
 * What turns a MiniCluster into broker pods on the real nodes for `bench --real`: this operator (a
 * local process watching the bench's namespace) with the Flux view mounted from its image
 * (`ours-volume`) or copied by an init container (`ours-copy`, the design the Go operator shares),
 * the Go Flux Operator (built from `../shared/peers/`, its own CRD installed in place of ours; it
 * always copies) and the floor of each design: the children this operator would render for the
 * same MiniCluster (`render`), created directly with no operator running (`floor-copy`,
 * `floor-volume`). The floor's pods are the same pods, so its times are what the kubelets, the Job
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
import { REAL_NODE_LABEL } from "../../hack/cluster/real_node_config.ts";
import { FLUX_APP_IMAGE, FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
import { goOperator, ours } from "../peer/contenders.ts";

export const REAL_CONTENDERS = [
  "ours-volume",
  "ours-copy",
  "go",
  "floor-copy",
  "floor-volume",
] as const;
export type RealContenderName = (typeof REAL_CONTENDERS)[number];

/**
 * How a contender's pods get the Flux view: the MiniCluster's `flux.container.viewFrom`. None for
 * the Go operator, whose CRD has no such field.
 */
export function viewFromOf(name: RealContenderName): "ImageVolume" | "Copy" | undefined {
  if (name === "go") return undefined;
  return name.endsWith("-volume") ? "ImageVolume" : "Copy";
}

/**
 * The bench's MiniCluster for a contender: the local Flux images pinned to the real nodes, whose
 * job is `hostname` on every broker.
 */
export function benchMiniCluster(
  contender: RealContenderName,
  name: string,
  namespace: string,
  size: number,
): MiniCluster {
  const viewFrom = viewFromOf(contender);
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name, namespace },
    spec: {
      size,
      containers: [{ image: FLUX_APP_IMAGE, command: "hostname" }],
      flux: { container: { image: FLUX_VIEW_IMAGE, ...(viewFrom ? { viewFrom } : {}) } },
      pod: {
        nodeSelector: { [REAL_NODE_LABEL]: "true" },
        tolerations: [{ key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" }],
      },
    } as MiniCluster["spec"],
  };
}

const FLOOR_KINDS: Record<string, ResourceType> = {
  Secret: Secrets,
  ConfigMap: ConfigMaps,
  Service: Services,
  Job: Jobs,
};

/** A child the floor creates, and its resource. */
export interface FloorChild {
  rt: ResourceType;
  obj: { kind: string; metadata: Record<string, unknown> & { name: string } };
}

/**
 * The floor's objects for a MiniCluster: what `render` gives (with a generated certificate), less
 * the workspace (the operator's memory, which no pod reads) and the owner references (no
 * MiniCluster object exists to own them).
 */
export async function floorChildren(mc: MiniCluster): Promise<FloorChild[]> {
  const objects: FloorChild[] = [];
  for (const child of await renderChildren(mc, { withSecrets: true })) {
    const obj = child as FloorChild["obj"];
    const rt = FLOOR_KINDS[obj.kind];
    if (!rt) continue;
    delete obj.metadata.ownerReferences;
    objects.push({ rt, obj });
  }
  return objects;
}

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
  if (name === "ours-volume" || name === "ours-copy" || name === "go") {
    if (name === "go") await refuseOtherMiniClusters(client, namespace);
    // The operators as the peer bench starts them. Ours: no children count (only the peer bench's
    // observer reads it) and concurrency 0, which passes no --concurrency (the operator's default).
    // The MiniCluster's viewFrom chooses the view's mode, whatever --flux-view-mount says.
    const operator = name === "go" ? await goOperator() : ours(0, 0, false);
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
  const rendered = new Map<string, FloorChild[]>();
  return {
    name,
    async create(mc) {
      const objects = await floorChildren(mc);
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
