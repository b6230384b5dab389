/**
 * The operator's command line: the manager's flags (runtime/options.ts) and the MiniCluster
 * controller's own, in one table that parsing, the environment variables, --help, the README's
 * configuration table and the Helm chart's values all come from.
 */
import {
  type FlagSpec,
  managerFlags,
  type ManagerOptions,
  OptionsError,
  parseFlags,
} from "../../runtime/options.ts";
import type { InlineCurveCertPolicy } from "./policy/curve_source.ts";
import { POD_SECURITY_LEVELS, type PodSecurityLevel } from "./policy/pod_security.ts";
import { FIRST_STATUS_DELAY, STATUS_TIMING, TIMING } from "./timing.ts";
import type { MiniClusterControllerOptions } from "./controller.ts";
import { FLUX_VIEW_MOUNTS, type FluxViewMount } from "./workspace/flux_view_choice.ts";

/** The program's name: its --help, its messages and the default name of its Lease. */
export const PROGRAM = "minicluster-operator";

export interface OperatorOptions extends ManagerOptions {
  /** Writes in flight while new MiniClusters arrive in a burst (runtime/pacing/burst_yield.ts); 0: off. */
  writesInFlightDuringBursts: number;
  /** Progress-only status changes are written at most this often per MiniCluster (timing.ts). */
  statusProgressIntervalMs: number;
  /** How long children's and pods' events are batched before their MiniCluster is reconciled. */
  childEventBatchMs: number;
  /**
   * The Pod Security Standard every MiniCluster's pods must meet ("privileged": no check); a
   * MiniCluster whose pods would not is refused as SpecInvalid before anything is created.
   */
  podSecurity: PodSecurityLevel;
  /**
   * Whether a MiniCluster may carry its CURVE certificate inline (`spec.flux.curveCert`, readable
   * by everyone who may read MiniClusters): "refuse" makes it SpecInvalid. The default "allow"
   * leaves the choice to the install's admission policy, which refuses it outside opted-in
   * namespaces before it is stored (deploy/inline-curve-cert-policy.yaml).
   */
  inlineCurveCert: InlineCurveCertPolicy;
  /**
   * What `spec.flux.container.viewFrom: Auto` means (workspace/flux_view_choice.ts): "auto" mounts
   * the view image where every node can, "image-volume" and "copy" say it for the whole cluster.
   */
  fluxViewMount: FluxViewMount;
  /** Serves Flux's queues as custom metrics on this port (HTTPS, custom_metrics_api.ts); 0: off. */
  customMetricsPort: number;
  /** The Service in the operator's namespace that the custom metrics APIService calls. */
  customMetricsService: string;
}

const WRITES_DURING_BURSTS: FlagSpec<OperatorOptions> = {
  name: "writes-in-flight-during-bursts",
  key: "writesInFlightDuringBursts",
  kind: "int",
  help: "Writes in flight while new MiniClusters arrive faster than 20 a second (someone " +
    "applying many at once), so that their creates keep the API server's CPU; the full bound " +
    "again a second after. 0: always --max-writes-in-flight.",
  default: "1",
};

/**
 * The longest progress interval: past ten minutes, `kubectl get minicluster` would show a cluster
 * still starting long after most of its brokers joined.
 */
const MAX_STATUS_PROGRESS_INTERVAL_MS = 600_000;

/**
 * The longest batch of child events: every change of a child (a pod failing among them) waits this
 * long before its MiniCluster is reconciled.
 */
const MAX_CHILD_EVENT_BATCH_MS = 60_000;

const STATUS_PROGRESS_INTERVAL: FlagSpec<OperatorOptions> = {
  name: "status-progress-interval",
  key: "statusProgressIntervalMs",
  kind: "duration",
  help: "How often at most a MiniCluster's status is rewritten while it only reports progress " +
    "(another pod ready); transitions (Ready, Failed, ...) are written at once. At most 10m. " +
    "0: every change at once.",
  default: `${TIMING.statusProgressIntervalMs / 1000}s`,
};

const CHILD_EVENT_BATCH: FlagSpec<OperatorOptions> = {
  name: "child-event-batch",
  key: "childEventBatchMs",
  kind: "duration",
  help: "How long the changes of a MiniCluster's children and pods are gathered before it is " +
    "reconciled, so that pods turning Ready one by one cost one reconcile; the first status " +
    "waits at least as long. At most 1m. 0: a reconcile for each change.",
  default: `${TIMING.secondaryBatchMs / 1000}s`,
};

const POD_SECURITY: FlagSpec<OperatorOptions> = {
  name: "pod-security",
  key: "podSecurity",
  kind: "string",
  choices: POD_SECURITY_LEVELS,
  help: "Pod Security Standard (privileged, baseline, restricted) that MiniClusters' pods must " +
    "meet; others are refused as SpecInvalid. baseline and restricted also refuse the " +
    "system-node-critical and system-cluster-critical priority classes. privileged: no check.",
  default: "privileged",
};

const INLINE_CURVE_CERT: FlagSpec<OperatorOptions> = {
  name: "inline-curve-cert",
  key: "inlineCurveCert",
  kind: "string",
  choices: ["allow", "refuse"],
  help: "spec.flux.curveCert (a CURVE secret key inline, read by all who read MiniClusters): " +
    "allow uses what admission let through (the install refuses it unless the namespace has " +
    "flux-framework.org/inline-curve-cert=allow); refuse makes it SpecInvalid everywhere.",
  default: "allow",
};

const FLUX_VIEW_MOUNT: FlagSpec<OperatorOptions> = {
  name: "flux-view-mount",
  key: "fluxViewMount",
  kind: "string",
  choices: FLUX_VIEW_MOUNTS,
  help: "How pods get the Flux view when a MiniCluster's spec.flux.container.viewFrom is Auto: " +
    "image-volume mounts the view image (the nodes' runtime must support image volumes with " +
    "subPath: containerd 2.2, CRI-O 1.33), copy copies it with an init container, auto mounts " +
    "it where every node that runs containers can (their runtime and kubelet versions, listed " +
    "at most once a minute; with --namespaces Nodes are not read: copy). Decided once per " +
    "MiniCluster, when its Job is first built.",
  default: "auto",
};

const CUSTOM_METRICS_PORT: FlagSpec<OperatorOptions> = {
  name: "custom-metrics-port",
  key: "customMetricsPort",
  kind: "int",
  help: "Serve the MiniClusters' Flux queues (spec.flux.queueReport) as the custom metrics API " +
    "custom.metrics.k8s.io/v1beta2 on this HTTPS port, for a HorizontalPodAutoscaler's Object " +
    "metric; the install must register the APIService (deploy/custom-metrics.yaml), which no " +
    "other adapter (prometheus-adapter) may hold. 0: off.",
  default: "0",
};

const CUSTOM_METRICS_SERVICE: FlagSpec<OperatorOptions> = {
  name: "custom-metrics-service",
  key: "customMetricsService",
  kind: "string",
  help: "The Service in the operator's namespace that the custom metrics APIService calls: its " +
    "DNS names go in the serving certificate, kept in the Secret <service>-tls.",
  default: "minicluster-operator-custom-metrics",
};

/**
 * Every flag of the operator, in --help's order: the burst bound beside the write bound it
 * lowers, the controller's own pacing mechanism among those --pacing-off names and its timing
 * after them, the MiniCluster policies last before --help.
 */
export const FLAGS: readonly FlagSpec<OperatorOptions>[] = managerFlags(PROGRAM).flatMap((f) =>
  f.name === "max-writes-in-flight" ? [f, WRITES_DURING_BURSTS] : f.name === "pacing-off"
    ? [
      { ...f, choices: [...f.choices ?? [], FIRST_STATUS_DELAY] },
      STATUS_PROGRESS_INTERVAL,
      CHILD_EVENT_BATCH,
    ]
    : f.name === "help"
    ? [
      POD_SECURITY,
      INLINE_CURVE_CERT,
      FLUX_VIEW_MOUNT,
      CUSTOM_METRICS_PORT,
      CUSTOM_METRICS_SERVICE,
      f,
    ]
    : [f]
);

/** The operator's options from its command line and environment (runtime/options.ts). */
export function parseOptions(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
): OperatorOptions {
  const opts = parseFlags(FLAGS, args, env);
  if (opts.statusProgressIntervalMs > MAX_STATUS_PROGRESS_INTERVAL_MS) {
    throw new OptionsError(
      "--status-progress-interval must be at most 10m (a cluster's progress would go unreported " +
        "longer)",
    );
  }
  if (opts.childEventBatchMs > MAX_CHILD_EVENT_BATCH_MS) {
    throw new OptionsError(
      "--child-event-batch must be at most 1m (every change of a child, a failing pod too, waits " +
        "this long before its MiniCluster is reconciled)",
    );
  }
  return opts;
}

/**
 * What the operator's own flags set of the MiniCluster controller (mod.ts, and the tests'
 * managers; the runtime's mechanisms get their switches from the manager,
 * `Manager.controllerPacing`). An operator confined to `--namespaces` holds its rights through
 * RoleBindings, which grant no Nodes: it does not read them (`nodeRuntimes: null`), and
 * `--flux-view-mount=auto` copies.
 */
export function controllerSettings(
  opts: OperatorOptions,
): Pick<
  MiniClusterControllerOptions,
  | "podSecurity"
  | "inlineCurveCert"
  | "fluxViewMount"
  | "nodeRuntimes"
  | "statusTiming"
  | "childEventBatchMs"
> {
  return {
    podSecurity: opts.podSecurity,
    inlineCurveCert: opts.inlineCurveCert,
    fluxViewMount: opts.fluxViewMount,
    ...(opts.namespaces.length > 0 ? { nodeRuntimes: null } : {}),
    childEventBatchMs: opts.childEventBatchMs,
    statusTiming: {
      firstStatusDelay: !opts.pacingOff.includes(FIRST_STATUS_DELAY),
      // The first status waits for the pods' batched events (timing.ts): at least one batch.
      firstStatusDelayMs: Math.max(STATUS_TIMING.firstStatusDelayMs, opts.childEventBatchMs),
      progressIntervalMs: opts.statusProgressIntervalMs,
    },
  };
}
