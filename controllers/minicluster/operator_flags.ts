/**
 * The operator's command line: the manager's flags (runtime/options.ts) and the MiniCluster
 * controller's own, in one table that parsing, the environment variables, --help, the README's
 * configuration table and the Helm chart's values all come from.
 */
import {
  type FlagSpec,
  managerFlags,
  type ManagerOptions,
  parseFlags,
} from "../../runtime/options.ts";
import type { InlineCurveCertPolicy } from "./policy/curve_source.ts";
import { POD_SECURITY_LEVELS, type PodSecurityLevel } from "./policy/pod_security.ts";
import { FIRST_STATUS_DELAY } from "./timing.ts";
import { FLUX_VIEW_MOUNTS, type FluxViewMount } from "./workspace/flux_view_choice.ts";

/** The program's name: its --help, its messages and the default name of its Lease. */
export const PROGRAM = "minicluster-operator";

export interface OperatorOptions extends ManagerOptions {
  /** Writes in flight while new MiniClusters arrive in a burst (runtime/pacing/burst_yield.ts); 0: off. */
  writesInFlightDuringBursts: number;
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

/**
 * Every flag of the operator, in --help's order: the burst bound beside the write bound it
 * lowers, the controller's own pacing mechanism among those --pacing-off names, the MiniCluster
 * policies last before --help.
 */
export const FLAGS: readonly FlagSpec<OperatorOptions>[] = managerFlags(PROGRAM).flatMap((f) =>
  f.name === "max-writes-in-flight"
    ? [f, WRITES_DURING_BURSTS]
    : f.name === "pacing-off"
    ? [{ ...f, choices: [...f.choices ?? [], FIRST_STATUS_DELAY] }]
    : f.name === "help"
    ? [POD_SECURITY, INLINE_CURVE_CERT, FLUX_VIEW_MOUNT, f]
    : [f]
);

/**
 * What the MiniCluster controller takes from the flags (mod.ts, and the tests' manager). An
 * operator confined to `--namespaces` holds its rights through RoleBindings, which grant no Nodes:
 * it does not read them (`nodeRuntimes: null`), and `--flux-view-mount=auto` copies.
 */
export function controllerFlags(opts: OperatorOptions): {
  podSecurity: PodSecurityLevel;
  inlineCurveCert: InlineCurveCertPolicy;
  fluxViewMount: FluxViewMount;
  nodeRuntimes?: null;
} {
  return {
    podSecurity: opts.podSecurity,
    inlineCurveCert: opts.inlineCurveCert,
    fluxViewMount: opts.fluxViewMount,
    ...(opts.namespaces.length > 0 ? { nodeRuntimes: null } : {}),
  };
}

/** The operator's options from its command line and environment (runtime/options.ts). */
export function parseOptions(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
): OperatorOptions {
  return parseFlags(FLAGS, args, env);
}
