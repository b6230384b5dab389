/**
 * The `--flux-view-mount` for an operator of the local cluster that is confined to namespaces (the
 * demo's, the real-node suites'): such an operator reads no Nodes, so its `auto` copies. Here the
 * operator's own `auto` rule (flux_view_choice.ts) is applied to the cluster's nodes on its behalf:
 * `image-volume` where every node that runs containers can mount the view image, else `copy`.
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { kubectl } from "../hack/kubectl.ts";
import {
  clusterMountsViewImage,
  type FluxViewMount,
} from "../controllers/minicluster/workspace/flux_view_choice.ts";

export async function clusterFluxViewMount(
  kubeconfig: string,
): Promise<{ mount: FluxViewMount; why: string }> {
  const nodes = (JSON.parse(await kubectl(kubeconfig, ["get", "nodes", "-o", "json"]))
    .items as Node[]).map((n) => ({
      name: n.metadata?.name ?? "",
      containerRuntimeVersion: n.status?.nodeInfo?.containerRuntimeVersion ?? "",
      kubeletVersion: n.status?.nodeInfo?.kubeletVersion ?? "",
    }));
  const { mounts, why } = clusterMountsViewImage(nodes);
  return { mount: mounts ? "image-volume" : "copy", why };
}
