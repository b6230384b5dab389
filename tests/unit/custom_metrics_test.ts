import assert from "node:assert/strict";
import type { MiniCluster } from "../../api/mod.ts";
import {
  customMetricsRoute,
  QUEUE_METRICS,
} from "../../controllers/minicluster/fluxqueue/custom_metrics.ts";

const V = "/apis/custom.metrics.k8s.io/v1beta2";
const NOW = new Date("2026-11-29T12:00:00.123Z");

function mc(status: MiniCluster["status"], queueReport: object | null = {}): MiniCluster {
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "elastic", namespace: "ns" },
    spec: {
      size: 1,
      containers: [{ image: "app" }],
      flux: queueReport ? { queueReport } : {},
    },
    status,
  } as MiniCluster;
}

const OBSERVED = {
  conditions: [{ type: "FluxQueueObserved", status: "True", reason: "Observed", message: "ok" }],
  fluxQueue: {
    jobs: { pending: 1, running: 1 },
    nodes: { total: 1, free: 0, allocated: 1, down: 0 },
    cores: { total: 2, free: 0, allocated: 2, down: 0 },
    pendingNodes: 1,
    largestPendingJobNodes: 1,
  },
} as MiniCluster["status"];

async function answer(path: string, found: MiniCluster | undefined) {
  const route = customMetricsRoute(path, () => found, () => NOW);
  assert.ok(route, path);
  return { attributes: route.attributes, ...(await route.answer()) };
}

Deno.test("custom metrics: discovery lists each queue metric of miniclusters.flux-framework.org", async () => {
  const list = await answer(V, undefined);
  assert.deepEqual(list.attributes, { verb: "get", path: V });
  const body = list.body as {
    groupVersion: string;
    resources: { name: string; verbs: string[] }[];
  };
  assert.equal(body.groupVersion, "custom.metrics.k8s.io/v1beta2");
  assert.deepEqual(
    body.resources.map((r) => r.name),
    Object.keys(QUEUE_METRICS).map((m) => `miniclusters.flux-framework.org/${m}`),
  );
  const group = await answer("/apis/custom.metrics.k8s.io", undefined);
  assert.equal(
    (group.body as { preferredVersion: { version: string } }).preferredVersion.version,
    "v1beta2",
  );
  assert.equal(
    customMetricsRoute("/apis/custom.metrics.k8s.io/v1beta1", () => undefined),
    undefined,
  );
  assert.equal(customMetricsRoute(`${V}/namespaces/ns/pods/p/cpu`, () => undefined), undefined);
});

Deno.test("custom metrics: a MiniCluster's metric is its observed queue, authorized as its subresource", async () => {
  const path = `${V}/namespaces/ns/miniclusters.flux-framework.org/elastic/flux_nodes_wanted`;
  const got = await answer(path, mc(OBSERVED));
  assert.deepEqual(got.attributes, {
    verb: "get",
    group: "custom.metrics.k8s.io",
    version: "v1beta2",
    resource: "miniclusters.flux-framework.org",
    subresource: "flux_nodes_wanted",
    namespace: "ns",
    name: "elastic",
  });
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, {
    kind: "MetricValueList",
    apiVersion: "custom.metrics.k8s.io/v1beta2",
    metadata: {},
    items: [{
      describedObject: {
        kind: "MiniCluster",
        namespace: "ns",
        name: "elastic",
        apiVersion: "flux-framework.org/v1alpha2",
      },
      metric: { name: "flux_nodes_wanted" },
      timestamp: "2026-11-29T12:00:00Z",
      value: "2", // 1 allocated + 1 asked for by the pending job
    }],
  });
  const values = Object.fromEntries(
    Object.entries(QUEUE_METRICS).map(([name, read]) => [name, read(OBSERVED!.fluxQueue!)]),
  );
  assert.deepEqual(values, {
    flux_nodes_wanted: 2,
    flux_pending_nodes: 1,
    flux_largest_pending_job_nodes: 1,
    flux_jobs_pending: 1,
    flux_jobs_running: 1,
    flux_nodes_free: 0,
    flux_nodes_allocated: 1,
    flux_cores_free: 0,
    flux_cores_allocated: 2,
  });
});

Deno.test("custom metrics: no value but a 404 that says why (the HPA shows it and scales nothing)", async () => {
  const path = (metric: string) =>
    `${V}/namespaces/ns/miniclusters.flux-framework.org/elastic/${metric}`;
  const cases: [MiniCluster | undefined, string, RegExp][] = [
    [undefined, "flux_nodes_wanted", /"elastic" not found/],
    [
      mc(OBSERVED),
      "cpu",
      /no metric cpu for miniclusters\.flux-framework\.org; served: flux_nodes_wanted/,
    ],
    [
      mc(OBSERVED, null),
      "flux_jobs_pending",
      /does not report its queue: set spec\.flux\.queueReport/,
    ],
    [mc({}), "flux_jobs_pending", /has no current queue report yet/],
    [
      mc(
        {
          conditions: [{
            type: "FluxQueueObserved",
            status: "False",
            reason: "LeadUnreachable",
            message: "connection refused",
          }],
        } as MiniCluster["status"],
      ),
      "flux_jobs_pending",
      /no current queue report \(LeadUnreachable: connection refused\)/,
    ],
  ];
  for (const [found, metric, message] of cases) {
    const got = await answer(path(metric), found);
    assert.equal(got.status, 404, metric);
    assert.match(String((got.body as { message: string }).message), message);
    assert.equal((got.body as { kind: string }).kind, "Status");
  }
});
