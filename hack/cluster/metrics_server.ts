// The resource metrics pipeline of the local cluster (`deno task cluster up --metrics`):
// metrics-server built from its Go module (hack/build-binaries.sh), made into an image and imported
// into the real nodes, installed from the Helm chart of the same module with the chart's defaults
// (kube-system, its self-signed serving certificate, an APIService `v1beta1.metrics.k8s.io` through
// the apiserver's aggregation layer), as users install it. It reads the kubelets' resource metrics
// and verifies their serving certificates with the cluster CA, which signed them: no
// `--kubelet-insecure-tls`. The HorizontalPodAutoscaler controller reads CPU through it.
//
// In-cluster on a real node, like Kueue (kueue.ts): an aggregated API server is reached by the
// apiserver through its Service, which needs kube-proxy's rules, which only real nodes bring.

import { join } from "node:path";
import { ensureBinaries } from "./binaries.ts";
import { applyServerSide, moduleDir, onRealNode, renderChart, waitUntil } from "./add_on.ts";
import { REAL_NODE_LABEL } from "./real_node_config.ts";
import { staticBinaryArchive } from "./real_node_images.ts";
import { importIntoRealNodes } from "./real_nodes.ts";
import { LOCAL_REGISTRY } from "../images/refs.ts";
import { kubectl } from "../kubectl.ts";

/** The version hack/build-binaries.sh builds. */
export const METRICS_SERVER_VERSION = "v0.9.0";
export const METRICS_SERVER_NAMESPACE = "kube-system";
const IMAGE_REPOSITORY = `${LOCAL_REGISTRY}/metrics-server`;

/**
 * Values for the chart: the local image on the real node `node`. One change to what users run:
 * only real nodes are scraped (`--node-selector`); KWOK's fake nodes serve no kubelet, and each
 * scrape of one would wait for its timeout and log an error every 15 s.
 */
export function metricsServerValues(node: string): Record<string, unknown> {
  return {
    image: { repository: IMAGE_REPOSITORY, tag: METRICS_SERVER_VERSION, pullPolicy: "Never" },
    args: [`--node-selector=${REAL_NODE_LABEL}=true`],
    resources: { requests: { cpu: "50m", memory: "64Mi" } },
    ...onRealNode(node),
  };
}

/**
 * Builds, imports and installs metrics-server on a running cluster with real nodes, and waits until
 * the metrics API lists every real node's usage (the proof that the aggregation layer, the
 * Service, the kubelets' certificates and the scrape all work).
 */
export async function installMetricsServer(
  dir: string,
  kubeconfig: string,
  node: string,
  realNodes: number,
): Promise<void> {
  const binDir = await ensureBinaries(["metrics-server", "helm"]);
  const archive = await staticBinaryArchive(
    join(binDir, "metrics-server"),
    `${IMAGE_REPOSITORY}:${METRICS_SERVER_VERSION}`,
    // The chart runs it as user 1000 (runAsNonRoot); its deployment passes the flags only.
    { Entrypoint: ["/metrics-server"], User: "1000:1000" },
  );
  await importIntoRealNodes(dir, [archive]);
  const chart = join(
    await moduleDir("sigs.k8s.io/metrics-server", METRICS_SERVER_VERSION),
    "charts",
    "metrics-server",
  );
  const objects = await renderChart(
    "metrics-server",
    chart,
    METRICS_SERVER_NAMESPACE,
    metricsServerValues(node),
  );
  await applyServerSide(kubeconfig, objects);
  await kubectl(kubeconfig, [
    "rollout",
    "status",
    `--namespace=${METRICS_SERVER_NAMESPACE}`,
    "deployment/metrics-server",
    "--timeout=300s",
  ]);
  await waitForNodeMetrics(kubeconfig, realNodes);
}

/** Until `/apis/metrics.k8s.io/v1beta1/nodes` lists `count` nodes. */
function waitForNodeMetrics(kubeconfig: string, count: number): Promise<void> {
  return waitUntil("the metrics API did not list the real nodes", async () => {
    const out = await kubectl(kubeconfig, ["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"]);
    const items = (JSON.parse(out) as { items?: unknown[] }).items ?? [];
    return items.length >= count
      ? undefined
      : `${items.length} of ${count} real nodes have metrics`;
  });
}
