// KWOK Stage documents (kwok.x-k8s.io/v1alpha1, given to `kwok --config`) that play the
// kubelet's part for pods on fake Nodes. Node stages are not listed: KWOK then uses its
// built-in ones (initialize Ready, heartbeat through Leases).
//
// Pod lifecycle on a fake Node:
// - `pod-ready`: a scheduled pod is Running and Ready at once, every container `running`
//   (init containers terminated with exit 0, sidecars running). Pods that no Job owns
//   (e.g. a bare "services" Pod) stay like this until deleted.
// - `pod-complete`: a Running pod owned by a Job succeeds (every container terminated with exit
//   code 0) after `kwok.x-k8s.io/complete-after` (a Go duration such as "30s"; default 1s),
//   so finite Jobs reach Complete.
// - `pod-fail`: as pod-complete, but a pod annotated `kwok.x-k8s.io/exit-code: "<n>"` with
//   n != 0 fails with that exit code, so Job backoff and failure paths can be exercised.
// - A Job pod annotated `kwok.x-k8s.io/keep-running: "true"` stays Running: a long-running
//   workload (an interactive MiniCluster, a scaling test). Removing the annotation, or setting
//   it to anything else, later lets it complete: KWOK re-evaluates stages on every update.
// - `pod-delete`: a pod being deleted goes away at once (finalizers dropped), as if its
//   containers stopped immediately.

import { stringify } from "yaml";

export const KEEP_RUNNING_ANNOTATION = "kwok.x-k8s.io/keep-running";
export const COMPLETE_AFTER_ANNOTATION = "kwok.x-k8s.io/complete-after";
const EXIT_CODE_ANNOTATION = "kwok.x-k8s.io/exit-code";
const DEFAULT_COMPLETE_AFTER_MS = 1000;

interface Expr {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  values?: string[];
}

const annotation = (name: string) => `.metadata.annotations["${name}"]`;

const notDeleting: Expr = { key: ".metadata.deletionTimestamp", operator: "DoesNotExist" };

/** Selects Running Job pods that are allowed to finish; `exit` picks success or failure. */
function finishingJobPod(exit: "zero" | "non-zero"): Expr[] {
  return [
    notDeleting,
    { key: ".status.phase", operator: "In", values: ["Running"] },
    { key: ".metadata.ownerReferences.[].kind", operator: "In", values: ["Job"] },
    { key: annotation(KEEP_RUNNING_ANNOTATION), operator: "NotIn", values: ["true"] },
    {
      key: `${annotation(EXIT_CODE_ANNOTATION)} // "0"`,
      operator: exit === "zero" ? "In" : "NotIn",
      values: ["0"],
    },
  ];
}

const completionDelay = {
  durationMilliseconds: DEFAULT_COMPLETE_AFTER_MS,
  durationFrom: { expressionFrom: annotation(COMPLETE_AFTER_ANNOTATION) },
};

// Go templates evaluated by KWOK against the pod; their output is a patch of `.status`.
const readyTemplate = `
{{ $now := Now }}
conditions:
{{ range list "Initialized" "PodReadyToStartContainers" "ContainersReady" "Ready" }}
- type: {{ . | Quote }}
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
{{ range .spec.readinessGates }}
- type: {{ .conditionType | Quote }}
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  restartCount: 0
{{ if eq .restartPolicy "Always" }}
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ else }}
  started: false
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ end }}
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
phase: Running
startTime: {{ $now | Quote }}
`;

function finishedTemplate(phase: "Succeeded" | "Failed", exitCode: string, reason: string) {
  return `
{{ $now := Now }}
conditions:
{{ range list "ContainersReady" "Ready" }}
- type: {{ . | Quote }}
  status: "False"
  reason: ${phase === "Succeeded" ? "PodCompleted" : "PodFailed"}
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: ${exitCode}
      reason: ${reason}
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ end }}
phase: ${phase}
`;
}

function stage(name: string, matchExpressions: Expr[], rest: Record<string, unknown>) {
  return {
    apiVersion: "kwok.x-k8s.io/v1alpha1",
    kind: "Stage",
    metadata: { name },
    spec: { resourceRef: { apiGroup: "v1", kind: "Pod" }, selector: { matchExpressions }, ...rest },
  };
}

export function podStages(): Record<string, unknown>[] {
  return [
    stage("pod-ready", [notDeleting, { key: ".status.podIP", operator: "DoesNotExist" }], {
      next: { statusTemplate: readyTemplate },
    }),
    stage("pod-complete", finishingJobPod("zero"), {
      delay: completionDelay,
      next: { statusTemplate: finishedTemplate("Succeeded", "0", "Completed") },
    }),
    stage("pod-fail", finishingJobPod("non-zero"), {
      delay: completionDelay,
      next: {
        statusTemplate: finishedTemplate(
          "Failed",
          `{{ index $.metadata.annotations "${EXIT_CODE_ANNOTATION}" }}`,
          "Error",
        ),
      },
    }),
    stage("pod-delete", [{ key: ".metadata.deletionTimestamp", operator: "Exists" }], {
      next: { finalizers: { empty: true }, delete: true },
    }),
  ];
}

/** The multi-document YAML file passed to `kwok --config`. */
export function renderKwokConfig(): string {
  return podStages().map((doc) => stringify(doc)).join("---\n");
}
