// The real-node e2e environment: a cluster with real nodes (kubelet + containerd), the operator
// installed in it from deploy/install.yaml and running from the local image, and one namespace
// that operator watches, where every real-node scenario creates its MiniClusters.
//
// Assertions come from what really ran: pod logs and `kubectl exec`, never the operator's view.
//
// Which cluster: $MC_KUBECONFIG with MC_REAL_NODES=1 (set by `deno task test`, which starts real
// nodes), else a healthy .cluster/ with real nodes (`deno task cluster up --real-nodes 2`; the
// MPI scenarios need their brokers on two kubelets and fail with one).
// Without either the scenarios are not registered as runnable: `deno task test` always provides
// real nodes and fails when the machine cannot run them.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import type { FluxViewMount } from "../../controllers/minicluster/workspace/flux_view_choice.ts";
import { clusterFluxViewMount } from "../../testing/flux_view_mount.ts";
import type { FluxView } from "../../controllers/minicluster/children/sizing.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { Pods } from "../../runtime/client/resources.ts";
import { JOB_NAME_LABEL } from "../../controllers/minicluster/children/names.ts";
import { INLINE_CURVE_CERT_OPT_IN } from "../../controllers/minicluster/policy/curve_source.ts";
import { REAL_NODE_LABEL } from "../../hack/cluster/real_node_config.ts";
import { FLUX_APP_IMAGE, FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
import { eventually, type TestEnv, withTimeout } from "../harness.ts";
import { installCrds } from "../e2e/env.ts";
import { inClusterManifest, OPERATOR_NAMESPACE } from "../../testing/in_cluster_install.ts";

export { OPERATOR_NAMESPACE };

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const DEV_STATE = join(ROOT, ".cluster", "state.json");
/** The namespace the in-cluster operator watches; every real scenario works in it. */
export const REAL_NAMESPACE = "mc-real-e2e";

/** Decided without IO at registration time (like `fullCluster()` for the KWOK e2e). */
export function realNodesAvailable(): boolean {
  if (Deno.env.get("MC_KUBECONFIG")) return Deno.env.get("MC_REAL_NODES") === "1";
  try {
    return (JSON.parse(Deno.readTextFileSync(DEV_STATE)).real?.count ?? 0) > 0;
  } catch {
    return false;
  }
}

/** An add-on `cluster up` installed, by its key in the state file and its suite variable. */
function addOnAvailable(key: "metricsServer" | "keda", variable: string): boolean {
  if (Deno.env.get("MC_KUBECONFIG")) return Deno.env.get(variable) === "1";
  try {
    return JSON.parse(Deno.readTextFileSync(DEV_STATE))[key] !== undefined;
  } catch {
    return false;
  }
}

/** metrics-server runs (`cluster up --metrics`; the suite's cluster has it: MC_METRICS=1). */
export const metricsServerAvailable = () => addOnAvailable("metricsServer", "MC_METRICS");
/** KEDA runs (`cluster up --keda`; the suite's cluster has it: MC_KEDA=1). */
export const kedaAvailable = () => addOnAvailable("keda", "MC_KEDA");

export function kubeconfigPath(): string {
  return Deno.env.get("MC_KUBECONFIG") ?? join(ROOT, ".cluster", "kubeconfig");
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** kubectl against the real cluster; resolves stdout, throws with stderr. */
export async function kubectl(args: string[], opts: { stdin?: string } = {}): Promise<string> {
  const child = new Deno.Command("kubectl", {
    args: ["--kubeconfig", kubeconfigPath(), ...args],
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (opts.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(opts.stdin));
    await w.close();
  }
  const out = await child.output();
  if (!out.success) {
    throw new Error(`kubectl ${args.join(" ")} failed (${out.code}): ${text(out.stderr)}`);
  }
  return text(out.stdout);
}

/**
 * What a namespace's pods are doing, for an error that would otherwise only say "timed out":
 * their phase and node, each container's state, the namespace's Events and the containers' last
 * log lines (of the previous run too, when a container restarted).
 */
export async function podsReport(namespace: string): Promise<string> {
  const run = (args: string[]) =>
    kubectl(["-n", namespace, ...args]).catch((e) => `(${e.message.trim()})`);
  const parts = [
    await run(["get", "pods", "-o", "wide"]),
    await run([
      "get",
      "pods",
      "-o",
      'jsonpath={range .items[*]}{.metadata.name}: {.status.containerStatuses}{"\\n"}{end}',
    ]),
    await run(["get", "events", "--sort-by=.lastTimestamp"]),
  ];
  const names = (await run(["get", "pods", "-o", "name"])).split("\n").filter((n) =>
    n.startsWith("pod/")
  );
  for (const pod of names) {
    parts.push(`${pod} logs:\n${await run(["logs", pod, "--all-containers", "--tail=40"])}`);
    parts.push(
      `${pod} previous logs:\n${await run([
        "logs",
        pod,
        "--all-containers",
        "--previous",
        "--tail=40",
      ])}`,
    );
  }
  return parts.join("\n");
}

/**
 * The real nodes' runtime as `cluster up` recorded it beside the kubeconfig ("debian" or not).
 * Read without IO waits, like `realNodesAvailable()`, so that scenarios can be registered by it.
 */
export function recordedRuntime(): string | undefined {
  try {
    const state = JSON.parse(Deno.readTextFileSync(join(dirname(kubeconfigPath()), "state.json")));
    return state.real?.runtime;
  } catch {
    return undefined;
  }
}

/**
 * What `viewFrom: Auto` means for the scenarios' operator, which watches one namespace and so reads
 * no Nodes itself: the operator's own `auto` rule applied to the nodes for it
 * (testing/flux_view_mount.ts). On the default real nodes (containerd 2) that is the mounted view,
 * which the suite must prove: a cluster that `up` gave containerd 2 and that still reads as unable
 * fails here rather than quietly copying.
 */
export async function suiteFluxViewMount(): Promise<FluxViewMount> {
  const { mount, why } = await clusterFluxViewMount(kubeconfigPath());
  const runtime = recordedRuntime();
  if (mount !== "image-volume" && runtime !== undefined && runtime !== "debian") {
    throw new Error(`the real nodes run ${runtime} but cannot mount the Flux view: ${why}`);
  }
  return mount;
}

let installed: Promise<FluxViewMount> | undefined;

/**
 * Installs the operator (once per process): applies the patched install manifest with the
 * suite's `--flux-view-mount`, restarts its pods so they run the image imported for this
 * checkout, and waits for the rollout. Also makes the scenarios' namespace. Resolves the mount.
 */
function inClusterOperator(): Promise<FluxViewMount> {
  return installed ??= (async () => {
    await installCrds(kubeconfigPath());
    const mount = await suiteFluxViewMount();
    console.error(`[real] the operator runs with --flux-view-mount=${mount}`);
    await kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], {
      stdin: await inClusterManifest([REAL_NAMESPACE], {
        fluxViewMount: mount,
        customMetrics: true,
      }),
    });
    await kubectl(["-n", OPERATOR_NAMESPACE, "rollout", "restart", "deploy/minicluster-operator"]);
    await kubectl([
      "-n",
      OPERATOR_NAMESPACE,
      "rollout",
      "status",
      "deploy/minicluster-operator",
      "--timeout=180s",
    ]).catch(async (e) => {
      throw new Error(`${e.message}\n${await podsReport(OPERATOR_NAMESPACE)}`);
    });
    // Opted in to spec.flux.curveCert, which the install's admission policy refuses elsewhere:
    // the scenarios run the Go operator's field on real Flux on purpose (tests/real/flux_test.ts).
    const optIn = { [INLINE_CURVE_CERT_OPT_IN.label]: INLINE_CURVE_CERT_OPT_IN.value };
    await kubectl(["apply", "-f", "-"], {
      stdin: stringify({
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: REAL_NAMESPACE, labels: optIn },
      }),
    });
    return mount;
  })();
}

/**
 * The view's mode a MiniCluster of the scenarios must show (status.fluxView): what its spec asks
 * for, else the suite's; Flux in the application image (`disable`) mounts nothing.
 */
export function expectedFluxView(mc: MiniCluster, mount: FluxViewMount): FluxView {
  const container = mc.spec?.flux?.container;
  if (container?.disable) return "Copy";
  if (container?.viewFrom === "ImageVolume" || container?.viewFrom === "Copy") {
    return container.viewFrom;
  }
  return mount === "image-volume" ? "ImageVolume" : "Copy";
}

export interface RealEnv extends TestEnv {
  /** Creates the MiniCluster (pinned to real nodes, local images) and returns it. */
  apply(mc: MiniCluster): Promise<void>;
  /** The MiniCluster's pods, by Job completion index. */
  pods(name: string): Promise<Pod[]>;
  logs(pod: string, container: string): Promise<string>;
  exec(pod: string, container: string, command: string[], stdin?: string): Promise<string>;
}

/**
 * A MiniCluster of the local images, pinned to real nodes: `spec` is merged over it and
 * `container` over its one Flux container.
 */
export function realMiniCluster(
  name: string,
  spec: Partial<MiniCluster["spec"]> = {},
  container: Record<string, unknown> = {},
): MiniCluster {
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name, namespace: REAL_NAMESPACE },
    spec: {
      size: 1,
      containers: [{ name: "flux", image: FLUX_APP_IMAGE, ...container }],
      flux: { container: { image: FLUX_VIEW_IMAGE } },
      pod: {
        nodeSelector: { [REAL_NODE_LABEL]: "true" },
        tolerations: [{ key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" }],
      },
      ...spec,
    } as MiniCluster["spec"],
  };
}

/**
 * Runs `script` in the Flux instance of MiniCluster `name`, through the generated connect script
 * in its lead broker's pod (Job index 0, not terminating): a shell on Flux as its owner.
 */
export async function onLead(env: RealEnv, name: string, script: string): Promise<string> {
  const lead = (await env.pods(name)).find((p) =>
    p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] === "0" &&
    !p.metadata?.deletionTimestamp
  );
  if (!lead) throw new Error(`${name}: no lead broker pod`);
  return await env.exec(lead.metadata!.name!, name, ["bash", "/mnt/flux/flux-connect.sh"], script);
}

/**
 * Registers a real-node scenario; its MiniClusters are deleted afterwards (also on failure) and
 * their pods waited for, so scenarios do not compete for the node.
 */
export function realTest(
  name: string,
  fn: (env: RealEnv) => Promise<void>,
  opts: { timeoutMs?: number; ignore?: boolean } = {},
): void {
  Deno.test({
    name,
    ignore: !realNodesAvailable() || opts.ignore === true,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const kubeconfig = kubeconfigPath();
      const mount = await inClusterOperator();
      const client = await KubeClient.fromKubeconfig(kubeconfig);
      const created: string[] = [];
      const expected = new Map<string, FluxView>();
      const env: RealEnv = {
        client,
        kubeconfig,
        namespace: REAL_NAMESPACE,
        async apply(mc) {
          created.push(mc.metadata!.name!);
          expected.set(mc.metadata!.name!, expectedFluxView(mc, mount));
          await kubectl(["apply", "-f", "-"], { stdin: stringify(mc) });
        },
        async pods(name) {
          const list = await client.list<Pod>(Pods, {
            namespace: REAL_NAMESPACE,
            labelSelector: `${JOB_NAME_LABEL}=${name}`,
          });
          const index = (p: Pod) =>
            Number(p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] ?? -1);
          return list.items.sort((a, b) => index(a) - index(b));
        },
        logs: (pod, container) => kubectl(["-n", REAL_NAMESPACE, "logs", pod, "-c", container]),
        exec: (pod, container, command, stdin) =>
          kubectl([
            "-n",
            REAL_NAMESPACE,
            "exec",
            ...(stdin === undefined ? [] : ["-i"]),
            pod,
            "-c",
            container,
            "--",
            ...command,
          ], { stdin }),
      };
      try {
        await withTimeout(fn(env), opts.timeoutMs ?? 240_000, name);
        // The scenario ran in the mode it was meant to prove: each MiniCluster that still has a
        // Job shows how its pods got the view.
        for (const [mc, view] of expected) {
          const shown = await kubectl([
            "-n",
            REAL_NAMESPACE,
            "get",
            "minicluster",
            mc,
            "--ignore-not-found",
            "-o",
            "jsonpath={.status.fluxView}",
          ]);
          if (shown && shown !== view) {
            throw new Error(`${mc}: the pods got the Flux view by ${shown}, not ${view}`);
          }
        }
      } finally {
        for (const mc of created) {
          await kubectl(["-n", REAL_NAMESPACE, "delete", "minicluster", mc, "--ignore-not-found"])
            .catch(() => {});
        }
        await eventually(async () => {
          for (const mc of created) {
            const left = await env.pods(mc);
            if (left.length > 0) throw new Error(`pods of ${mc} still exist`);
          }
        }, { timeoutMs: 60_000, intervalMs: 500 }).catch(() => {});
        client.close();
      }
    },
  });
}

/**
 * The lead broker's log of a MiniCluster whose script ran `flux resource list` and
 * `flux run -N<size> hostname`: every broker free in the instance, the job run once on each, and
 * Flux's exit 0. Returns the log.
 */
export async function assertFluxRanEveryBroker(
  env: RealEnv,
  name: string,
  size: number,
): Promise<string> {
  const pods = await env.pods(name);
  const log = await env.logs(pods[0].metadata!.name!, name);
  const free = log.split("\n").find((l) => l.trim().startsWith("free "));
  if (Number(free?.trim().split(/\s+/)[1]) !== size) {
    throw new Error(`${name}: not ${size} brokers free:\n${log}`);
  }
  for (let i = 0; i < size; i++) {
    if (!new RegExp(`^${name}-${i}$`, "m").test(log)) {
      throw new Error(`${name}: rank ${i} did not run:\n${log}`);
    }
  }
  if (!/Flux finished with exit code 0/.test(log)) throw new Error(`${name}: Flux failed:\n${log}`);
  return log;
}
