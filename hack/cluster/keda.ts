// KEDA in the local cluster (`deno task cluster up --keda`): its operator, metrics API server and
// admission webhooks built from its Go module (hack/build-binaries.sh), made into images and
// imported into the real nodes, installed from the kustomize configuration of the same module
// (`config/default`, what KEDA's release manifest is made from) in namespace `keda`. KEDA makes its
// own certificates (the operator's `--enable-cert-rotation`) and puts their CA into its APIService
// (`v1beta1.external.metrics.k8s.io`, through the apiserver's aggregation layer) and webhook.
//
// On a real node, like Kueue and metrics-server: the apiserver reaches an aggregated API and a
// webhook through their Services, which needs kube-proxy's rules, which only real nodes bring.

import { join } from "node:path";
import { ensureBinaries } from "./binaries.ts";
import { applyServerSide, moduleDir, onRealNode, parseObjects, waitUntil } from "./add_on.ts";
import { staticBinaryArchive } from "./real_node_images.ts";
import { importIntoRealNodes } from "./real_nodes.ts";
import { LOCAL_REGISTRY } from "../images/refs.ts";
import { kubectl } from "../kubectl.ts";

/** The version hack/build-binaries.sh builds. */
export const KEDA_VERSION = "v2.21.0";
export const KEDA_NAMESPACE = "keda";

/** KEDA's programs: binary (and image) name → the Deployment that runs it. */
const PROGRAMS = {
  "keda": "keda-operator",
  "keda-adapter": "keda-metrics-apiserver",
  "keda-admission-webhooks": "keda-admission",
} as const;
type Program = keyof typeof PROGRAMS;

const imageOf = (program: Program) => `${LOCAL_REGISTRY}/${program}:${KEDA_VERSION}`;

type Obj = Record<string, unknown>;
interface PodSpec {
  containers: { image?: string; imagePullPolicy?: string; command?: string[] }[];
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
}

/**
 * KEDA's objects as its configuration makes them, with two changes for this cluster: each
 * Deployment runs the local image of its program (never pulled) and is pinned to the real node
 * `node`.
 */
export function kedaObjects(rendered: Obj[], node: string): Obj[] {
  return rendered.map((o) => {
    if (o.kind !== "Deployment") return o;
    const copy = structuredClone(o) as Obj & { spec: { template: { spec: PodSpec } } };
    const pod = copy.spec.template.spec;
    for (const c of pod.containers) {
      const program = c.command?.[0]?.replace(/^\//, "") as Program | undefined;
      if (!program || !(program in PROGRAMS)) {
        throw new Error(`KEDA's Deployment ${JSON.stringify(copy.metadata)} runs ${c.command}`);
      }
      c.image = imageOf(program);
      c.imagePullPolicy = "Never";
    }
    const placement = onRealNode(node);
    pod.nodeSelector = { ...pod.nodeSelector, ...placement.nodeSelector };
    pod.tolerations = [...(pod.tolerations ?? []), ...placement.tolerations];
    return copy;
  });
}

/**
 * Builds, imports and installs KEDA on a running cluster with real nodes, and waits until its
 * Deployments run and the external metrics API answers through the aggregation layer.
 */
export async function installKeda(dir: string, kubeconfig: string, node: string): Promise<void> {
  const binDir = await ensureBinaries(["keda"]);
  const archives = await Promise.all(
    (Object.keys(PROGRAMS) as Program[]).map((program) =>
      staticBinaryArchive(join(binDir, program), imageOf(program), {
        Entrypoint: [`/${program}`],
        // Its Deployments run as non-root (runAsNonRoot), which needs a numeric user.
        User: "65532:65532",
      })
    ),
  );
  await importIntoRealNodes(dir, archives);
  const config = join(await moduleDir("github.com/kedacore/keda/v2", KEDA_VERSION), "config");
  const rendered = parseObjects(await kubectl(kubeconfig, ["kustomize", join(config, "default")]));
  await applyServerSide(kubeconfig, kedaObjects(rendered, node));
  for (const deployment of Object.values(PROGRAMS)) {
    await kubectl(kubeconfig, [
      "rollout",
      "status",
      `--namespace=${KEDA_NAMESPACE}`,
      `deployment/${deployment}`,
      "--timeout=300s",
    ]);
  }
  await waitForExternalMetrics(kubeconfig);
}

/** Until the APIService of the external metrics API is Available. */
function waitForExternalMetrics(kubeconfig: string): Promise<void> {
  return waitUntil("KEDA's external metrics API was not available", async () => {
    const out = await kubectl(kubeconfig, [
      "get",
      "apiservice",
      "v1beta1.external.metrics.k8s.io",
      "-o",
      "json",
    ]);
    const conditions = (JSON.parse(out) as {
      status?: { conditions?: { type: string; status: string; message?: string }[] };
    }).status?.conditions ?? [];
    const available = conditions.find((c) => c.type === "Available");
    if (available?.status === "True") return undefined;
    return available?.message ?? "no Available condition";
  });
}
