/**
 * Flux's queue as custom metrics (custom.metrics.k8s.io/v1beta2, `--custom-metrics-port`): the
 * numbers of a MiniCluster's status.fluxQueue as metrics of the MiniCluster object, so that a
 * plain HorizontalPodAutoscaler scales it on its queue with an `Object` metric:
 *
 *   metrics:
 *     - type: Object
 *       object:
 *         describedObject: { apiVersion: flux-framework.org/v1alpha2, kind: MiniCluster, name: x }
 *         metric: { name: flux_nodes_wanted }
 *         target: { type: AverageValue, averageValue: "1" }   # one broker per node wanted
 *
 * Read from the operator's cache of MiniClusters, which every replica keeps (a standby answers
 * too): a value is what the status shows, present only while FluxQueueObserved is True; otherwise
 * the answer is 404 with the condition's message, which the HPA puts in its ScalingActive
 * condition and scales nothing. Pure but for the lookup it is given.
 */
import type { MiniCluster } from "../../../api/mod.ts";
import type { FluxQueueStatus } from "../../../api/mod.ts";
import type { Answer, Route } from "../../../runtime/aggregated/server.ts";
import { statusAnswer } from "../../../runtime/aggregated/server.ts";
import { FLUX_QUEUE_OBSERVED } from "./observation.ts";

export const CUSTOM_METRICS_GROUP = "custom.metrics.k8s.io";
export const CUSTOM_METRICS_VERSION = "v1beta2";
/** The APIService an install registers for this API (deploy/custom-metrics.yaml). */
export const CUSTOM_METRICS_API_SERVICE = `${CUSTOM_METRICS_VERSION}.${CUSTOM_METRICS_GROUP}`;
/** How the API names the MiniCluster resource: its plural and group. */
export const MINICLUSTER_RESOURCE = "miniclusters.flux-framework.org";

/** Each metric and how it is read from status.fluxQueue. */
export const QUEUE_METRICS: Readonly<Record<string, (q: FluxQueueStatus) => number | undefined>> = {
  /** The size the work asks for: nodes allocated plus those the pending jobs ask for. */
  flux_nodes_wanted: (q) =>
    q.nodes?.allocated === undefined ? undefined : q.nodes.allocated + (q.pendingNodes ?? 0),
  flux_pending_nodes: (q) => q.pendingNodes,
  flux_largest_pending_job_nodes: (q) => q.largestPendingJobNodes,
  flux_jobs_pending: (q) => q.jobs?.pending,
  flux_jobs_running: (q) => q.jobs?.running,
  flux_nodes_free: (q) => q.nodes?.free,
  flux_nodes_allocated: (q) => q.nodes?.allocated,
  flux_cores_free: (q) => q.cores?.free,
  flux_cores_allocated: (q) => q.cores?.allocated,
};

const PREFIX = `/apis/${CUSTOM_METRICS_GROUP}`;
const VERSION_PATH = `${PREFIX}/${CUSTOM_METRICS_VERSION}`;
const OBJECT_PATH = new RegExp(
  `^${VERSION_PATH.replaceAll(".", "\\.")}/namespaces/([^/]+)/${
    MINICLUSTER_RESOURCE.replaceAll(".", "\\.")
  }/([^/]+)/([^/]+)$`,
);

/** The API's discovery documents and metric values; `lookup` reads a MiniCluster from the cache. */
export function customMetricsRoute(
  path: string,
  lookup: (namespace: string, name: string) => MiniCluster | undefined,
  now: () => Date = () => new Date(),
): Route | undefined {
  const discovery = (body: unknown): Route => ({
    attributes: { verb: "get", path },
    answer: () => ({ status: 200, body }),
  });
  if (path === PREFIX) {
    const version = {
      groupVersion: `${CUSTOM_METRICS_GROUP}/${CUSTOM_METRICS_VERSION}`,
      version: CUSTOM_METRICS_VERSION,
    };
    return discovery({
      kind: "APIGroup",
      apiVersion: "v1",
      name: CUSTOM_METRICS_GROUP,
      versions: [version],
      preferredVersion: version,
    });
  }
  if (path === VERSION_PATH) {
    return discovery({
      kind: "APIResourceList",
      apiVersion: "v1",
      groupVersion: `${CUSTOM_METRICS_GROUP}/${CUSTOM_METRICS_VERSION}`,
      resources: Object.keys(QUEUE_METRICS).map((metric) => ({
        name: `${MINICLUSTER_RESOURCE}/${metric}`,
        singularName: "",
        namespaced: true,
        kind: "MetricValueList",
        verbs: ["get"],
      })),
    });
  }
  const m = path.match(OBJECT_PATH);
  if (!m) return undefined;
  const [namespace, name, metric] = m.slice(1).map(decodeURIComponent);
  return {
    attributes: {
      verb: "get",
      group: CUSTOM_METRICS_GROUP,
      version: CUSTOM_METRICS_VERSION,
      resource: MINICLUSTER_RESOURCE,
      subresource: metric,
      namespace,
      name,
    },
    answer: () => metricAnswer(lookup(namespace, name), namespace, name, metric, now()),
  };
}

/** One metric of one MiniCluster, or a 404 that says why there is none. */
export function metricAnswer(
  mc: MiniCluster | undefined,
  namespace: string,
  name: string,
  metric: string,
  now: Date,
): Answer {
  const read = QUEUE_METRICS[metric];
  if (!read) {
    return statusAnswer(
      404,
      "NotFound",
      `no metric ${metric} for ${MINICLUSTER_RESOURCE}; served: ${
        Object.keys(QUEUE_METRICS).join(", ")
      }`,
    );
  }
  if (!mc) return statusAnswer(404, "NotFound", `${MINICLUSTER_RESOURCE} "${name}" not found`);
  if (!mc.spec?.flux?.queueReport) {
    return statusAnswer(
      404,
      "NotFound",
      `MiniCluster ${namespace}/${name} does not report its queue: set spec.flux.queueReport`,
    );
  }
  const condition = mc.status?.conditions?.find((c) => c.type === FLUX_QUEUE_OBSERVED);
  const value = mc.status?.fluxQueue ? read(mc.status.fluxQueue) : undefined;
  if (condition?.status !== "True" || value === undefined) {
    return statusAnswer(
      404,
      "NotFound",
      `MiniCluster ${namespace}/${name} has no current queue report` +
        (condition ? ` (${condition.reason}: ${condition.message})` : " yet"),
    );
  }
  return {
    status: 200,
    body: {
      kind: "MetricValueList",
      apiVersion: `${CUSTOM_METRICS_GROUP}/${CUSTOM_METRICS_VERSION}`,
      metadata: {},
      items: [{
        describedObject: {
          kind: "MiniCluster",
          namespace,
          name,
          apiVersion: mc.apiVersion ?? "flux-framework.org/v1alpha2",
        },
        metric: { name: metric },
        timestamp: now.toISOString().replace(/\.\d+Z$/, "Z"),
        value: String(value),
      }],
    },
  };
}
