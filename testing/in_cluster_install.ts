/**
 * deploy/install.yaml as a user applies it, with what a run on the local cluster's real nodes
 * needs: the operator pinned to a real node (nodeSelector + toleration) and watching only the given
 * namespaces (the KWOK e2e and the benches run operators of their own in other namespaces of the
 * same cluster), and, when given, with a `--flux-view-mount` (such an operator reads no Nodes, so
 * its `auto` copies), and, when asked, with the custom metrics API (deploy/optional/). The image is the one install.yaml names, built locally and imported into the node.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, stringify } from "yaml";
import { REAL_NODE_LABEL } from "../hack/cluster/real_node_config.ts";
import { OPERATOR_IMAGE } from "../hack/images/refs.ts";
import type { FluxViewMount } from "../controllers/minicluster/workspace/flux_view_choice.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const OPERATOR_NAMESPACE = "minicluster-system";
export const OPERATOR_DEPLOYMENT = "minicluster-operator";
/** Where deploy/optional/custom-metrics.yaml's Service sends the API server. */
const CUSTOM_METRICS_PORT = 6443;
const CUSTOM_METRICS_SOURCE = "deploy/optional/custom-metrics.yaml";

export async function inClusterManifest(
  watchNamespaces: string[],
  opts: { fluxViewMount?: FluxViewMount; customMetrics?: boolean } = {},
): Promise<string> {
  const docs = parseAllDocuments(await Deno.readTextFile(join(ROOT, "deploy", "install.yaml")))
    .map((d) => d.toJS());
  if (opts.customMetrics) {
    const optional = await Deno.readTextFile(join(ROOT, CUSTOM_METRICS_SOURCE));
    docs.push(...parseAllDocuments(optional).map((d) => d.toJS()).filter((o) => o));
  }
  for (const doc of docs) {
    if (doc?.kind !== "Deployment") continue;
    const pod = doc.spec.template.spec;
    if (pod.containers[0].image !== OPERATOR_IMAGE) {
      throw new Error(
        `install.yaml names ${pod.containers[0].image}, the local image is ${OPERATOR_IMAGE}`,
      );
    }
    pod.nodeSelector = { ...pod.nodeSelector, [REAL_NODE_LABEL]: "true" };
    pod.tolerations = [
      ...(pod.tolerations ?? []),
      { key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" },
    ];
    pod.containers[0].env.push({ name: "OPERATOR_NAMESPACES", value: watchNamespaces.join(",") });
    if (opts.customMetrics) {
      pod.containers[0].env.push({
        name: "OPERATOR_CUSTOM_METRICS_PORT",
        value: String(CUSTOM_METRICS_PORT),
      });
    }
    if (opts.fluxViewMount) {
      pod.containers[0].env.push({ name: "OPERATOR_FLUX_VIEW_MOUNT", value: opts.fluxViewMount });
    }
  }
  return docs.map((d) => stringify(d)).join("---\n");
}
