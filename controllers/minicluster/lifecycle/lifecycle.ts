/**
 * The Job's lifecycle as the MiniCluster reports and acts on it: suspended (by the user or held by
 * a queue controller), finished, and when a finished MiniCluster's time to live ends.
 *
 * Everything here is read from the Job as observed (its `spec.suspend`, its conditions and their
 * transition times), never from the MiniCluster's status, so a lost status changes nothing.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { KUEUE_QUEUE_LABEL } from "../children/queue.ts";
import type { QueueReport } from "./queue_workload.ts";

export const SUSPENDED = "Suspended";

/** Ready's reasons while the Job is suspended (also shown by the Status printer column). */
export const SUSPENDED_REASON = "Suspended";
export const WAITING_FOR_ADMISSION = "WaitingForAdmission";

/**
 * The Suspended condition: [status, reason, message]. The Job suspended while the user asked for it
 * is `Suspended`; suspended while the user did not is a queue controller holding it,
 * `WaitingForAdmission` (the operator never resumes such a Job), or, when Kueue evicted its
 * Workload, Kueue's reason for the eviction (`Preempted`, ...). A MiniCluster suspended from the
 * start has no Job until it is resumed; one whose Job Kueue tracks (`queue.workload`) is suspended
 * through its Workload (queue_workload.ts).
 */
export function suspendedCondition(
  job: Job | undefined,
  requested: boolean,
  queue?: QueueReport,
): [boolean, string, string] {
  const suspended = job?.spec?.suspend === true;
  if (requested && !job) {
    return [
      true,
      SUSPENDED_REASON,
      "spec.suspend is true: the Job is created when it is false (a queue controller, such as " +
      "Kueue in a namespace with a default LocalQueue, would admit a new Job as soon as it exists)",
    ];
  }
  if (requested && queue?.workload) return queuedSuspension(job!, queue);
  if (suspended && queue?.evicted) {
    const { reason, message } = queue.evicted;
    return [
      true,
      reason || EVICTED_REASON,
      `evicted by Kueue (${reason}): ${message}; the Job waits for admission in queue ${queue.queue}`,
    ];
  }
  if (suspended && requested) {
    return [
      true,
      SUSPENDED_REASON,
      "spec.suspend is true: the Job has no pods until it is false" + untracked(queue),
    ];
  }
  if (suspended) return [true, WAITING_FOR_ADMISSION, admissionMessage(job!, queue)];
  if (requested) {
    return [false, "Suspending", "spec.suspend is true: suspending the Job" + untracked(queue)];
  }
  return [false, "NotSuspended", job ? "the Job is not suspended" : "the Job does not exist yet"];
}

/** Why a labelled Job is suspended by the operator rather than through Kueue. */
function untracked(queue?: QueueReport): string {
  if (queue?.untracked === "unserved") {
    return ` (the Job is labelled for queue ${queue.queue}, but this cluster does not serve ` +
      "Kueue's Workloads (kueue.x-k8s.io/v1beta2), so the operator suspends the Job itself)";
  }
  if (queue?.untracked === "none") {
    return ` (the Job is labelled for queue ${queue.queue}, but Kueue made no Workload for it, ` +
      "so the operator suspends the Job itself)";
  }
  return "";
}

function admissionMessage(job: Job, queue?: QueueReport): string {
  const name = job.metadata?.labels?.[KUEUE_QUEUE_LABEL];
  const by = name ? `queue ${name}` : "a queue controller";
  const why = queue?.pending ? ` (Kueue: ${queue.pending})` : "";
  return `waiting for admission: the Job was suspended by ${by}, not by spec.suspend${why}; ` +
    "the operator leaves it to that controller to resume";
}

/** Kueue's eviction without a reason (never seen; Kueue always gives one). */
const EVICTED_REASON = "Evicted";

/** spec.suspend of a MiniCluster whose Job Kueue tracks: carried out by deactivating its Workload. */
function queuedSuspension(job: Job, queue: QueueReport): [boolean, string, string] {
  const workload = `Kueue's Workload ${queue.workload}`;
  if (job.spec?.suspend === true && queue.inactive) {
    return [
      true,
      SUSPENDED_REASON,
      `spec.suspend is true: ${workload} is deactivated, so the Job has no pods until it is false`,
    ];
  }
  return [
    false,
    "Suspending",
    `spec.suspend is true: deactivating ${workload}, after which Kueue suspends the Job`,
  ];
}

/** The field managers that own the Job's `spec.suspend` (its managedFields: who set it). */
export function suspendOwners(job: Job): string[] {
  return (job.metadata?.managedFields ?? [])
    .filter((m) => {
      const spec = (m.fieldsV1 as Record<string, Record<string, unknown>> | undefined)?.["f:spec"];
      return !m.subresource && spec?.["f:suspend"] !== undefined;
    })
    .map((m) => m.manager ?? "");
}

/**
 * The Job is suspended and `manager` alone set that (by apply or patch, before a restart or not):
 * no queue controller holds it, so the operator resumes it when spec.suspend is no longer true. A
 * suspension nobody owns (set by a mutating webhook at creation) is not the operator's.
 */
export function suspendedOnlyBy(job: Job, manager: string): boolean {
  const owners = suspendOwners(job);
  return job.spec?.suspend === true && owners.length > 0 && owners.every((o) => o === manager);
}

/** A True Job condition of `type`, if any. */
export function jobCondition(job: Job | undefined, type: string) {
  return job?.status?.conditions?.find((c) => c.type === type && c.status === "True");
}

/**
 * The Job succeeded: Complete, or already SuccessCriteriaMet (the lead broker's index succeeded,
 * the Job controller is stopping the followers).
 */
export function jobSucceeded(job: Job | undefined) {
  return jobCondition(job, "Complete") ?? jobCondition(job, "SuccessCriteriaMet");
}

/** When the Job finished (its Complete or Failed condition turned True), if it did. */
function finishedAt(job: Job | undefined): Date | undefined {
  const done = jobCondition(job, "Complete") ?? jobCondition(job, "Failed");
  const time = done?.lastTransitionTime;
  if (!time) return undefined;
  const at = new Date(time);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/**
 * How long until a MiniCluster with `ttlSecondsAfterFinished` is deleted: undefined while the Job
 * has not finished (or there is no TTL), 0 when it is due now.
 */
export function ttlRemainingMs(
  ttlSeconds: number | undefined,
  job: Job | undefined,
  now: Date,
): number | undefined {
  if (ttlSeconds === undefined || ttlSeconds === null) return undefined;
  const at = finishedAt(job);
  if (!at) return undefined;
  return Math.max(0, at.getTime() + ttlSeconds * 1000 - now.getTime());
}
