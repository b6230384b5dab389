/**
 * The MiniCluster's status as a pure function of what the reconciler observed.
 *
 * Status is a report, never a memory: nothing here is read back to decide what to build (that is the
 * workspace's job), so a lost or stale status cannot change the cluster. The previous conditions are
 * consulted for one thing only — keeping `lastTransitionTime` when a condition did not change — which
 * is what makes an unchanged MiniCluster produce an identical status and therefore no write.
 */
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { Job, JobCondition } from "kubernetes-types/batch/v1.d.ts";
import type {
  ContainerStateWaiting,
  ContainerStatus,
  Pod,
  PodCondition,
} from "kubernetes-types/core/v1.d.ts";
import type { Problem } from "../../../runtime/controller/dependents.ts";
import {
  jobCondition,
  jobSucceeded,
  SUSPENDED,
  suspendedCondition,
} from "../lifecycle/lifecycle.ts";
import { boundedMessage } from "./messages.ts";
import { fluxViewOf, viewImageOf } from "../children/job.ts";
import {
  FLUX_VIEW_EMPTY_EXIT_CODE,
  fluxViewEmptyMessage,
} from "../children/scripts/view-environment.ts";
import type { FluxView } from "../children/sizing.ts";
import type { QueueReport } from "../lifecycle/queue_workload.ts";
import { LEAD_FAILED_EXIT_CODE, LEAD_FAILED_MESSAGE } from "../children/scripts/lead-finished.ts";
import {
  FLUX_QUEUE_OBSERVED,
  fluxQueueCondition,
  type FluxQueueObservation,
  type FluxQueueSnapshot,
  fluxQueueStatus,
} from "../fluxqueue/observation.ts";
import { DRAINING } from "./drain_condition.ts";

export type { Condition };

/** Condition types the operator sets. */
export const READY = "Ready";
export const SUCCEEDED = "Succeeded";
export const FAILED = "Failed";
export const SPEC_INVALID = "SpecInvalid";
export const UNAPPLIABLE = "Unappliable";
export const SIZE_CLAMPED = "SizeClamped";
/** Present only for a MiniCluster with a gang (gang_condition.ts). */
export const GANG_SCHEDULING = "GangScheduling";
/** Present only for a MiniCluster that drains removed brokers (drain_condition.ts). */
export { DRAINING };

/** For events: is True the good state of this condition (Ready) or the bad one (Failed)? */
export const NEGATIVE_POLARITY = new Set([FAILED, SPEC_INVALID, UNAPPLIABLE, SIZE_CLAMPED]);

/** The status fields the operator writes (the CRD's status schema). */
export interface MiniClusterStatus {
  conditions: Condition[];
  observedGeneration?: number;
  /** Observed Job parallelism (the scale subresource's replicas). */
  size: number;
  /** The scale subresource's label selector. */
  selector: string;
  /** Pods of the Job that are Running and Ready. */
  readyPods: number;
  /** The Job's UID once it exists (v1alpha2 compatibility field). */
  jobid: string;
  /** Largest size the cluster can be scaled to: the maxSize its brokers were bootstrapped with. */
  maximumSize: number;
  /** How the Job's pods get the Flux view, as its pod template says; absent without a Job. */
  fluxView?: FluxView;
  /** Flux's queue as last reported, while it is current (spec.flux.queueReport). */
  fluxQueue?: FluxQueueSnapshot;
}

/** A reason and message for a problem condition. */
export type { Problem };

export interface StatusInput {
  generation?: number;
  /** `hpa-selector=<name>`. */
  selector: string;
  /** spec.size as the user asked for it. */
  requestedSize: number;
  /** The size applied to the Job (requestedSize clamped to [1, maximumSize]). */
  effectiveSize: number;
  maximumSize: number;
  /** The spec cannot be built (validation or builder failure): no children exist for it. */
  invalid?: Problem;
  /** Something of the spec could not be applied (immutable Job fields, API errors). */
  unappliable?: Problem;
  /** The Job as observed after this reconcile's writes (undefined when there is none). */
  job?: Job;
  /** Pods of this MiniCluster's Job. */
  pods: readonly Pod[];
  /** spec.suspend is true. */
  suspendRequested?: boolean;
  /** Kueue's Workload, when the MiniCluster is queued by Kueue. */
  queue?: QueueReport;
  /** Why the Job cannot create pods, as the Job controller reported it (create_failures.ts). */
  createFailure?: string;
  /** The GangScheduling condition (gang_condition.ts), when there is a gang to report. */
  gang?: [boolean, string, string];
  /** What the poller knows of Flux's queue, when the spec asks for it (fluxqueue/poller.ts). */
  fluxQueue?: FluxQueueObservation;
  /** status.fluxQueue as stored, kept while the poller has read nothing yet (`unread`). */
  previousFluxQueue?: FluxQueueSnapshot;
  /** The Draining condition (drain_condition.ts), when the spec drains removed brokers. */
  drain?: [boolean, string, string];
  /** Conditions currently stored, only to keep their lastTransitionTime. */
  previous?: readonly Condition[];
  /** RFC 3339 time used for transitions that happen now. */
  now: string;
}

/** The reason of the Failed condition when a container found the mounted Flux view empty. */
export const FLUX_VIEW_EMPTY = "FluxViewEmpty";

/**
 * The reason of the Ready condition when the runtime could not create a container with the Flux
 * view image volume mounted (the container never starts, so its entrypoint cannot say why).
 */
export const FLUX_VIEW_NOT_MOUNTED = "FluxViewNotMounted";

/**
 * The Failed condition's reason and message from the Job's: when the Job failed on an exit code
 * of its podFailurePolicy, what that code means (a failed run of the lead broker; a mounted view
 * without Flux, which gets its own reason: the fix is the cluster's, not the workload's).
 */
function failedReport(failed: JobCondition, job: Job): [string, string] {
  const message = failed.message || "the Job failed";
  const onCode = (code: number) =>
    failed.reason === "PodFailurePolicy" && message.includes(`exit code ${code} `);
  if (onCode(FLUX_VIEW_EMPTY_EXIT_CODE)) {
    return [FLUX_VIEW_EMPTY, `${fluxViewEmptyMessage(viewImageOf(job))}; ${message}`];
  }
  if (onCode(LEAD_FAILED_EXIT_CODE)) {
    return [failed.reason || "JobFailed", `${message}; ${LEAD_FAILED_MESSAGE}`];
  }
  return [failed.reason || "JobFailed", message];
}

/** Computes the complete status from observations. */
export function computeStatus(input: StatusInput): MiniClusterStatus {
  const { job, pods, invalid } = input;
  const readyPods = countReadyPods(pods, job);
  const complete = jobSucceeded(job);
  const failed = jobCondition(job, "Failed");
  const suspended = suspendedCondition(job, input.suspendRequested === true, input.queue);

  const conditions: Omit<Condition, "lastTransitionTime">[] = [];
  const add = (type: string, ok: boolean, reason: string, message: string) =>
    conditions.push({
      type,
      status: ok ? "True" : "False",
      reason,
      message: boundedMessage(message),
      observedGeneration: input.generation,
    });

  add(
    READY,
    ...readyCondition(input, readyPods, complete !== undefined, failed !== undefined, suspended),
  );
  add(
    SUCCEEDED,
    complete !== undefined,
    complete ? "JobComplete" : "NotComplete",
    complete ? (complete.message || "all pods of the Job completed") : "the Job has not completed",
  );
  add(
    FAILED,
    failed !== undefined,
    ...(failed && job
      ? failedReport(failed, job)
      : ["NotFailed", "the Job has not failed"] as [string, string]),
  );
  add(
    SPEC_INVALID,
    invalid !== undefined,
    invalid?.reason ?? "SpecValid",
    invalid?.message ?? "the spec can be built",
  );
  add(
    UNAPPLIABLE,
    input.unappliable !== undefined,
    input.unappliable?.reason ?? "Applied",
    input.unappliable?.message ?? "every child holds the desired spec",
  );
  add(SIZE_CLAMPED, ...sizeCondition(input));
  add(SUSPENDED, ...suspended);
  if (input.gang) add(GANG_SCHEDULING, ...input.gang);
  if (input.drain) add(DRAINING, ...input.drain);
  // Before this process's first read of the lead pod, what the stored status shows stands.
  const stored = input.fluxQueue?.unread
    ? input.previous?.find((c) => c.type === FLUX_QUEUE_OBSERVED)
    : undefined;
  if (stored) {
    const { status, reason, message } = stored;
    conditions.push({
      type: FLUX_QUEUE_OBSERVED,
      status,
      reason,
      message,
      observedGeneration: input.generation,
    });
  } else if (input.fluxQueue) {
    add(FLUX_QUEUE_OBSERVED, ...fluxQueueCondition(input.fluxQueue));
  }
  const fluxQueue = stored
    ? (stored.status === "True" ? input.previousFluxQueue : undefined)
    : input.fluxQueue && fluxQueueStatus(input.fluxQueue);

  return {
    conditions: conditions.map((c) => withTransitionTime(c, input.previous, input.now)),
    observedGeneration: input.generation,
    size: job?.spec?.parallelism ?? 0,
    selector: input.selector,
    readyPods,
    jobid: job?.metadata?.uid ?? "",
    maximumSize: input.maximumSize,
    ...(job ? { fluxView: fluxViewOf(job) } : {}),
    ...(fluxQueue ? { fluxQueue } : {}),
  };
}

function readyCondition(
  input: StatusInput,
  readyPods: number,
  complete: boolean,
  failed: boolean,
  [suspended, suspendedReason, suspendedMessage]: [boolean, string, string],
): [boolean, string, string] {
  if (input.invalid) return [false, "SpecInvalid", input.invalid.message];
  if (!input.job && suspended) return [false, suspendedReason, suspendedMessage];
  if (!input.job) return [false, "JobNotCreated", "the Job does not exist yet"];
  if (complete) return [false, "JobComplete", "the Job has completed"];
  if (failed) return [false, "JobFailed", "the Job has failed"];
  if (suspended) return [false, suspendedReason, suspendedMessage];
  const size = input.job.spec?.parallelism ?? input.effectiveSize;
  const message = `${readyPods}/${size} pods ready`;
  if (readyPods >= size && size > 0) return [true, "PodsReady", message];
  // Why the others are not: the reason stays PodsNotReady (a container between ErrImagePull and
  // ImagePullBackOff must not make Events flap); the message names what holds the pods back.
  const why = podProblems(input.pods, input.job);
  const emptyView = activePods(input.pods, input.job).some((p) =>
    (p.status?.containerStatuses ?? []).some(foundViewEmpty)
  );
  if (emptyView) {
    const cause = fluxViewEmptyMessage(viewImageOf(input.job));
    return [false, FLUX_VIEW_EMPTY, [message, cause, ...why].join("; ")];
  }
  const notMounted = fluxViewOf(input.job) === "ImageVolume"
    ? activePods(input.pods, input.job).flatMap((p) => p.status?.containerStatuses ?? [])
      .map(imageVolumeMountFailure).find((f) => f !== undefined)
    : undefined;
  if (notMounted) {
    const cause = fluxViewNotMountedMessage(viewImageOf(input.job), notMounted);
    return [false, FLUX_VIEW_NOT_MOUNTED, [message, cause, ...why].join("; ")];
  }
  if (input.createFailure) {
    // Its own reason: a cluster that cannot make its pods is not merely slow (an Event marks it).
    const cause = detail("the Job cannot create pods", input.createFailure, MAX_CREATE_FAILURE);
    return [false, "FailedCreate", [message, cause, ...why].join("; ")];
  }
  return [false, "PodsNotReady", why.length ? `${message}; ${why.join("; ")}` : message];
}

/** Waiting reasons every container goes through on its way to running: not worth reporting. */
const ROUTINE_WAITING_REASONS: ReadonlySet<string> = new Set([
  "ContainerCreating",
  "PodInitializing",
]);

/**
 * A container restarted after finding the mounted Flux view empty (restartPolicy OnFailure, which
 * allows no podFailurePolicy: the Job does not fail on it at once).
 */
export function foundViewEmpty(cs: ContainerStatus): boolean {
  return cs.lastState?.terminated?.exitCode === FLUX_VIEW_EMPTY_EXIT_CODE;
}

/**
 * Why the runtime could not mount an image volume, retried by the kubelet forever
 * (CreateContainerError). The kubelet hands an image volume to the runtime as a mount with an image
 * and an empty host path:
 * - `Unsupported`: a runtime that knows no image mounts (containerd before 2.1: `failed to mkdir
 *   "": mkdir : no such file or directory`) takes it for a bind mount and fails on that empty path.
 *   A file system call on the empty path is the mark: Go prints it as `<op> : <error>`.
 * - `NoSuchPath`: one that does (containerd 2.2 and later) finds no `subPath` of the view in the
 *   image (`ImageVolumeMountFailed: failed to ensure image subpath "opt/views"`): the image is no
 *   Flux view image.
 */
export type ImageVolumeMountFailure = "Unsupported" | "NoSuchPath";

/** How a container failed to mount an image volume, if that is why it was not created. */
export function imageVolumeMountFailure(cs: ContainerStatus): ImageVolumeMountFailure | undefined {
  const waiting = cs.state?.waiting;
  if (waiting?.reason !== "CreateContainerError") return undefined;
  const message = waiting.message ?? "";
  if (/ImageVolumeMountFailed: failed to ensure image subpath/.test(message)) return "NoSuchPath";
  if (/\b[a-z]+ : no such file or directory/.test(message)) return "Unsupported";
  return undefined;
}

/** What the Ready condition says when the runtime could not mount the view image. */
export function fluxViewNotMountedMessage(image: string, failure: ImageVolumeMountFailure): string {
  if (failure === "NoSuchPath") {
    return `the container runtime could not mount the Flux view image volume (${image}): the ` +
      "image has no opt/views or opt/software, so it is not a Flux view image (one holds Flux " +
      "under /opt/views/._view/<hash> and /opt/software); set spec.flux.container.image to a Flux " +
      "view image";
  }
  return `the container runtime could not mount the Flux view image volume (${image}): ` +
    "this node's container runtime does not support image volumes (containerd 2.2 or CRI-O " +
    "1.33 and later are needed); set spec.flux.container.viewFrom: Copy (delete and re-create " +
    "the MiniCluster) or run the operator with --flux-view-mount=copy";
}

/** A container's wait when it is worth reporting (not a routine step of starting). */
export function reportableWait(cs: ContainerStatus): ContainerStateWaiting | undefined {
  const waiting = cs.state?.waiting;
  return waiting?.reason && !ROUTINE_WAITING_REASONS.has(waiting.reason) ? waiting : undefined;
}

/** The pod condition saying the scheduler could not place the pod (yet). */
export function isUnscheduled(c: PodCondition): boolean {
  return c.type === "PodScheduled" && c.status === "False";
}

/** At most this many distinct problems are named, and this many pods for each. */
const MAX_PROBLEMS = 3;
const MAX_PODS_PER_PROBLEM = 3;
/** Scheduler and kubelet messages can be long; the condition message stays readable. */
const MAX_DETAIL = 200;
/** A Pod Security rejection lists every violated check: room for several. */
const MAX_CREATE_FAILURE = 600;

/**
 * Why active pods of the Job are not running: unschedulable, or a container waiting for a reason
 * other than the routine ones (the pod cache keeps only those, see cache_view.ts). Pods with the
 * same problem are named together, e.g. `Unschedulable: 0/4 nodes are available: ... (pods mc-0-x,
 * mc-1-y)`. Deterministic (sorted), so an unchanged cluster gives an unchanged message.
 */
export function podProblems(pods: readonly Pod[], job?: Job): string[] {
  const byProblem = new Map<string, string[]>();
  const note = (problem: string, pod: string) => {
    const names = byProblem.get(problem) ?? [];
    names.push(pod);
    byProblem.set(problem, names);
  };
  const sorted = [...activePods(pods, job)].sort((a, b) =>
    (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "")
  );
  for (const pod of sorted) {
    const name = pod.metadata?.name ?? "";
    const status = pod.status;
    const unscheduled = status?.conditions?.find(isUnscheduled);
    if (unscheduled) note(detail(unscheduled.reason || "Unschedulable", unscheduled.message), name);
    for (const cs of [...status?.initContainerStatuses ?? [], ...status?.containerStatuses ?? []]) {
      const waiting = reportableWait(cs);
      if (waiting) note(detail(`${waiting.reason} (container ${cs.name})`, waiting.message), name);
    }
  }
  const problems = [...byProblem].map(([problem, names]) => {
    const shown = names.slice(0, MAX_PODS_PER_PROBLEM).join(", ");
    const more = names.length > MAX_PODS_PER_PROBLEM
      ? ` and ${names.length - MAX_PODS_PER_PROBLEM} more`
      : "";
    return `${problem} (${names.length === 1 ? "pod" : "pods"} ${shown}${more})`;
  });
  if (problems.length <= MAX_PROBLEMS) return problems;
  return [
    ...problems.slice(0, MAX_PROBLEMS),
    `${problems.length - MAX_PROBLEMS} more problems`,
  ];
}

function detail(what: string, message?: string, max = MAX_DETAIL): string {
  const text = message?.replace(/\s+/g, " ").trim();
  if (!text) return what;
  return `${what}: ${text.length > max ? `${text.slice(0, max - 1)}…` : text}`;
}

function sizeCondition(input: StatusInput): [boolean, string, string] {
  const { requestedSize, effectiveSize, maximumSize } = input;
  if (requestedSize > maximumSize) {
    return [
      true,
      "AboveMaximum",
      `requested size ${requestedSize} is above the maximum ${maximumSize} the brokers were started with; running ${effectiveSize}`,
    ];
  }
  if (requestedSize < 1) {
    return [true, "BelowMinimum", `requested size ${requestedSize} is below 1; running 1`];
  }
  return [false, "WithinBounds", `size ${requestedSize} is within [1, ${maximumSize}]`];
}

/** Keeps the stored lastTransitionTime when a condition's status did not change. */
function withTransitionTime(
  c: Omit<Condition, "lastTransitionTime">,
  previous: readonly Condition[] | undefined,
  now: string,
): Condition {
  const before = previous?.find((p) => p.type === c.type);
  const lastTransitionTime = before && before.status === c.status && before.lastTransitionTime
    ? before.lastTransitionTime
    : now;
  return { ...c, lastTransitionTime } as Condition;
}

/**
 * Pods that count as members of the running cluster: not finished, not being deleted, and (when the
 * Job is known) created by this Job, so that a stale pod of a deleted and re-created Job never counts.
 */
export function activePods(pods: readonly Pod[], job?: Job): Pod[] {
  return pods.filter((p) =>
    !p.metadata?.deletionTimestamp &&
    p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed" &&
    (!job?.metadata?.uid || !p.metadata?.ownerReferences ||
      p.metadata.ownerReferences.some((o) => o.uid === job.metadata?.uid))
  );
}

/** Running pods whose Ready condition is True. */
export function countReadyPods(pods: readonly Pod[], job?: Job): number {
  return activePods(pods, job).filter((p) =>
    p.status?.phase === "Running" &&
    p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True")
  ).length;
}

/**
 * True when `next` differs from the stored status only in how far the pods have come: the ready
 * pod count, Flux's queue numbers and the conditions' messages, every condition keeping its status
 * and reason. Such a change reports progress, not a transition; the reconciler may batch it with
 * the next one.
 */
export function progressOnly(stored: unknown, next: MiniClusterStatus): boolean {
  const prev = stored as Partial<MiniClusterStatus> | undefined;
  if (!prev?.conditions) return false;
  const strip = (st: Partial<MiniClusterStatus>) => ({
    ...st,
    readyPods: undefined,
    fluxQueue: undefined,
    conditions: st.conditions?.map((c) => ({ ...c, message: undefined })),
  });
  return sameStatus(strip(prev), strip(next));
}

/** Status equality as the API server would store it (undefined fields dropped). */
export function sameStatus(a: unknown, b: unknown): boolean {
  return stableJson(a) === stableJson(b);
}

function stableJson(v: unknown): string {
  return JSON.stringify(v ?? {}, (_k, x) => {
    if (x === null || typeof x !== "object" || Array.isArray(x)) return x;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(x).sort()) {
      const val = (x as Record<string, unknown>)[k];
      if (val !== undefined) out[k] = val;
    }
    return out;
  });
}
