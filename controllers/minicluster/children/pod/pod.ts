/**
 * Pod-level options of MiniCluster pods from `spec.pod` and `spec.network`: labels, annotations,
 * scheduling (node selector, node affinity, tolerations, the default spreading affinity),
 * identity (service account, token, runtime class), DNS, host namespaces, security context.
 */
import type {
  Affinity,
  Container,
  LocalObjectReference,
  PodSpec,
  Toleration,
} from "kubernetes-types/core/v1.d.ts";
import { annotationsForPod } from "./container_annotations.ts";
import { APP_NAME_LABEL, HPA_SELECTOR_LABEL, jobName, podLabels } from "../names.ts";
import type { DefaultedMiniCluster, DefaultedMiniClusterContainer } from "../../../../api/mod.ts";

const ZONE_TOPOLOGY_KEY = "topology.kubernetes.io/zone";
const HOSTNAME_TOPOLOGY_KEY = "kubernetes.io/hostname";
const DEFAULT_RESTART_POLICY = "OnFailure";
/**
 * The Job's pods restart Never unless the spec says otherwise: only then may the Job carry the
 * podFailurePolicy that fails it on a failed run of the lead broker (job.ts).
 */
const DEFAULT_JOB_RESTART_POLICY = "Never";

/** `spec.pod.restartPolicy` of the Job's pods, Never when unset. */
export function jobRestartPolicy(mc: DefaultedMiniCluster): "OnFailure" | "Never" {
  return mc.spec.pod.restartPolicy || DEFAULT_JOB_RESTART_POLICY;
}

/** Labels of the Job's pods: the user's `spec.pod.labels`, then ours (which selectors rely on). */
export function jobPodLabels(mc: DefaultedMiniCluster): Record<string, string> {
  return { ...sortedMap(mc.spec.pod?.labels), ...podLabels(mc) };
}

/**
 * Labels of the services pod: like the Job's pods, but without the HPA selector label, which
 * the scale subresource uses to count the Job's pods only.
 */
export function servicesPodLabels(mc: DefaultedMiniCluster): Record<string, string> {
  const labels = jobPodLabels(mc);
  delete labels[HPA_SELECTOR_LABEL];
  return labels;
}

/**
 * `spec.pod.annotations` for a pod with these containers (those naming another pod's container
 * left out, container_annotations.ts), or undefined when none are left.
 */
export function podAnnotations(
  mc: DefaultedMiniCluster,
  containers: Container[],
): Record<string, string> | undefined {
  const annotations = annotationsForPod(sortedMap(mc.spec.pod?.annotations), containers);
  return Object.keys(annotations).length > 0 ? annotations : undefined;
}

/** Pull secrets named by containers (and the flux view), each once, in order of appearance. */
export function imagePullSecrets(
  containers: DefaultedMiniClusterContainer[],
  extra: (string | undefined)[] = [],
): LocalObjectReference[] | undefined {
  const names = [...containers.map((c) => c.imagePullSecret), ...extra].filter((n): n is string =>
    !!n
  );
  const unique = [...new Set(names)];
  return unique.length > 0 ? unique.map((name) => ({ name })) : undefined;
}

/** `spec.pod.tolerations` as given (empty fields left out). */
function tolerations(mc: DefaultedMiniCluster): Toleration[] | undefined {
  const list = (mc.spec.pod?.tolerations ?? []).map((t) => {
    const out: Toleration = {};
    if (t.key) out.key = t.key;
    if (t.operator) out.operator = t.operator;
    if (t.value) out.value = t.value;
    if (t.effect) out.effect = t.effect;
    return out;
  });
  return list.length > 0 ? list : undefined;
}

/**
 * The Job pods' affinity: unless `network.disableAffinity`, prefer one pod per node and prefer
 * one zone; plus `spec.pod.nodeAffinity` as required "In" terms. (The Go operator dropped the
 * node affinity together with the default affinity; a requirement is not a preference.)
 */
export function jobAffinity(mc: DefaultedMiniCluster): Affinity | undefined {
  const affinity: Affinity = {};
  if (!mc.spec.network?.disableAffinity) {
    const term = (topologyKey: string) => ({
      weight: 100,
      podAffinityTerm: {
        labelSelector: {
          matchExpressions: [{ key: APP_NAME_LABEL, operator: "In", values: [jobName(mc)] }],
        },
        topologyKey,
      },
    });
    affinity.podAffinity = {
      preferredDuringSchedulingIgnoredDuringExecution: [term(ZONE_TOPOLOGY_KEY)],
    };
    affinity.podAntiAffinity = {
      preferredDuringSchedulingIgnoredDuringExecution: [term(HOSTNAME_TOPOLOGY_KEY)],
    };
  }
  const required = nodeAffinity(mc);
  if (required) affinity.nodeAffinity = required;
  return Object.keys(affinity).length > 0 ? affinity : undefined;
}

/** The services pod's affinity: only the user's node affinity. */
export function servicesPodAffinity(mc: DefaultedMiniCluster): Affinity | undefined {
  const required = nodeAffinity(mc);
  return required ? { nodeAffinity: required } : undefined;
}

function nodeAffinity(mc: DefaultedMiniCluster): Affinity["nodeAffinity"] | undefined {
  const labels = mc.spec.pod?.nodeAffinity ?? {};
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return undefined;
  return {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{
        matchExpressions: keys.map((key) => ({ key, operator: "In", values: [...labels[key]] })),
      }],
    },
  };
}

/**
 * Options both kinds of pods take from `spec.pod`. The whole security context is passed on (the
 * Go operator kept only fsGroup). The token is mounted only when asked for, as in Go.
 */
export function commonPodOptions(mc: DefaultedMiniCluster): PodSpec {
  const pod = mc.spec.pod;
  const options: Partial<PodSpec> = {
    restartPolicy: pod.restartPolicy || DEFAULT_RESTART_POLICY,
    serviceAccountName: pod.serviceAccountName || undefined,
    automountServiceAccountToken: pod.automountServiceAccountToken === true,
    runtimeClassName: pod.runtimeClassName || undefined,
    schedulerName: pod.schedulerName || undefined,
    priorityClassName: pod.priorityClassName || undefined,
    nodeSelector: nonEmpty(sortedMap(pod.nodeSelector)),
    tolerations: tolerations(mc),
    dnsPolicy: pod.dnsPolicy || undefined,
    securityContext: pod.securityContext && Object.keys(pod.securityContext).length > 0
      ? pod.securityContext
      : undefined,
  };
  return withoutUndefined(options) as PodSpec;
}

/**
 * Options only the Job's pods take: the grace period of the drain, host namespaces and the shared
 * process namespace.
 *
 * `spec.pod.resources` is not passed on. The Go operator put it in the pod overhead, but pod
 * admission rejects every pod whose overhead is not exactly the one its RuntimeClass declares
 * (and fills that in by itself), so there the field only ever stopped the Job from creating pods.
 */
export function jobOnlyPodOptions(mc: DefaultedMiniCluster): Partial<PodSpec> {
  const pod = mc.spec.pod;
  return withoutUndefined({
    // The preStop hook drains a removed follower within it (scripts/drain.ts).
    terminationGracePeriodSeconds: mc.spec.flux.drainGracePeriodSeconds,
    shareProcessNamespace: mc.spec.shareProcessNamespace ? true : undefined,
    hostIPC: pod.hostIPC ? true : undefined,
    hostPID: pod.hostPID ? true : undefined,
  });
}

/** Pod spec fields in one fixed order, so that the manifests read the same every time. */
const POD_SPEC_ORDER: (keyof PodSpec)[] = [
  "hostname",
  "subdomain",
  "setHostnameAsFQDN",
  "restartPolicy",
  "serviceAccountName",
  "automountServiceAccountToken",
  "runtimeClassName",
  "schedulerName",
  "priorityClassName",
  "nodeSelector",
  "affinity",
  "tolerations",
  "dnsPolicy",
  "terminationGracePeriodSeconds",
  "shareProcessNamespace",
  "hostIPC",
  "hostPID",
  "securityContext",
  "imagePullSecrets",
  "initContainers",
  "containers",
  "volumes",
];

export function orderedPodSpec(spec: PodSpec): PodSpec {
  const out: Record<string, unknown> = {};
  for (const key of POD_SPEC_ORDER) if (spec[key] !== undefined) out[key] = spec[key];
  for (const [key, value] of Object.entries(spec)) {
    if (!(key in out) && value !== undefined) out[key] = value;
  }
  return out as unknown as PodSpec;
}

export function sortedMap(map: Record<string, string> | undefined): Record<string, string> {
  const m = map ?? {};
  return Object.fromEntries(Object.keys(m).sort().map((k) => [k, m[k]]));
}

function nonEmpty(map: Record<string, string>): Record<string, string> | undefined {
  return Object.keys(map).length > 0 ? map : undefined;
}

function withoutUndefined<T extends object>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}
