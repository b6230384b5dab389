// Kueue in the local cluster (`deno task cluster up --kueue`): the manager built from its Go module
// (hack/build-binaries.sh), made into an image and imported into the real nodes, installed from the
// Helm chart of the same module and run in-cluster on a real node behind its Service.
//
// In-cluster rather than as a host process: Kueue manages its own certificates, a self-signed CA and
// a serving certificate for `kueue-webhook-service.kueue-system.svc`, injected into its webhook
// configurations and the conversion settings of its CRDs. Run as it is everywhere else, that path
// is exercised as users have it; a host process would need every webhook and conversion
// `clientConfig` rewritten to a URL and a certificate naming the host, which nothing upstream
// documents. The price is a real node: `--kueue` needs `--real-nodes` ≥ 1.

import { join } from "node:path";
import { ensureBinaries } from "./binaries.ts";
import { applyServerSide, moduleDir, onRealNode, renderChart, waitUntil } from "./add_on.ts";
import { staticBinaryArchive } from "./real_node_images.ts";
import { importIntoRealNodes } from "./real_nodes.ts";
import { LOCAL_REGISTRY } from "../images/refs.ts";
import { kubectl } from "../kubectl.ts";

/** The version hack/build-binaries.sh builds (the only one the Go module proxy serves here). */
export const KUEUE_VERSION = "v0.17.0";
export const KUEUE_IMAGE = `${LOCAL_REGISTRY}/kueue:${KUEUE_VERSION}`;
export const KUEUE_NAMESPACE = "kueue-system";
/** Kueue's label that puts a batch/v1 Job in a LocalQueue. */
export const QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name";

/**
 * Kueue's configuration: the chart's own, with the built-in batch/v1 Job as the only integration.
 * The other integrations register mutating webhooks with `failurePolicy: Fail` on Pods,
 * Deployments and StatefulSets of every namespace, which would make every pod of every test depend
 * on Kueue being up; a MiniCluster's pods belong to its Job, which Kueue queues as a whole.
 */
export const KUEUE_MANAGER_CONFIG = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 50
  burst: 100
integrations:
  frameworks:
  - batch/job
`;

/**
 * Values for the chart: the local image on the real node `node` (the last: Kueue's Job webhook,
 * failurePolicy Fail, must answer every Job created while the first one's kubelet restarts), sized
 * for a 2-core machine.
 */
export function kueueValues(node: string): Record<string, unknown> {
  return {
    controllerManager: {
      // Elastic Jobs (alpha): a MiniCluster annotated `kueue.x-k8s.io/elastic-job: "true"`
      // (spec.jobAnnotations) may be resized while admitted.
      featureGates: [{ name: "ElasticJobsViaWorkloadSlices", enabled: true }],
      manager: {
        image: { repository: `${LOCAL_REGISTRY}/kueue`, tag: KUEUE_VERSION, pullPolicy: "Never" },
        resources: {
          requests: { cpu: "100m", memory: "128Mi" },
          limits: { memory: "512Mi" },
        },
      },
      ...onRealNode(node),
    },
    managerConfig: { controllerManagerConfigYaml: KUEUE_MANAGER_CONFIG },
  };
}

/**
 * The chart's objects (its visibility API's APIService included: the apiserver runs the
 * aggregation layer), less the webhooks of integrations the configuration leaves off, which the
 * chart keeps with `failurePolicy: Ignore` and Kueue answers by doing nothing: on Pods, that is a
 * call to Kueue for every pod created in the cluster.
 */
export function kueueObjects(rendered: Record<string, unknown>[]): Record<string, unknown>[] {
  return rendered
    .map((o) => {
      if (!/^(Mutating|Validating)WebhookConfiguration$/.test(String(o.kind))) return o;
      const webhooks = (o.webhooks as { failurePolicy?: string }[] | undefined) ?? [];
      return { ...o, webhooks: webhooks.filter((w) => w.failurePolicy !== "Ignore") };
    });
}

/**
 * Builds, imports and installs Kueue on a running cluster with real nodes, and waits until its
 * webhook suspends a queued Job (the proof that certificates, Service and webhook all work).
 */
export async function installKueue(dir: string, kubeconfig: string, node: string): Promise<void> {
  const binDir = await ensureBinaries(["kueue", "helm"]);
  const archive = await staticBinaryArchive(join(binDir, "kueue"), KUEUE_IMAGE, {
    Entrypoint: ["/manager"],
    // The chart runs it as non-root (runAsNonRoot), which needs a numeric user in the image.
    User: "65532:65532",
  }, "manager"); // the chart runs /manager
  await importIntoRealNodes(dir, [archive]);
  const chart = join(await moduleDir("sigs.k8s.io/kueue", KUEUE_VERSION), "charts", "kueue");
  const rendered = await renderChart("kueue", chart, KUEUE_NAMESPACE, kueueValues(node));
  const objects = kueueObjects(rendered);
  await kubectl(kubeconfig, ["create", "namespace", KUEUE_NAMESPACE]).catch((e: Error) => {
    if (!/AlreadyExists/.test(e.message)) throw e;
  });
  await applyServerSide(kubeconfig, objects);
  await kubectl(kubeconfig, [
    "rollout",
    "status",
    `--namespace=${KUEUE_NAMESPACE}`,
    "deployment/kueue-controller-manager",
    "--timeout=300s",
  ]);
  await waitForJobWebhook(kubeconfig);
}

/** A Job that names a queue, as Kueue's webhook must answer it: created suspended. */
function probeJob(): Record<string, unknown> {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: "kueue-webhook-probe",
      namespace: "default",
      labels: { [QUEUE_NAME_LABEL]: "kueue-webhook-probe" },
    },
    spec: {
      template: {
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "probe", image: "probe" }],
        },
      },
    },
  };
}

/** Until a dry-run create of a queued Job comes back suspended. */
function waitForJobWebhook(kubeconfig: string): Promise<void> {
  return waitUntil("Kueue's Job webhook did not answer", async () => {
    const out = await kubectl(
      kubeconfig,
      ["create", "--dry-run=server", "-o", "json", "-f", "-"],
      JSON.stringify(probeJob()),
    );
    const suspended = (JSON.parse(out) as { spec?: { suspend?: boolean } }).spec?.suspend;
    return suspended === true ? undefined : "the Job came back unsuspended";
  });
}
