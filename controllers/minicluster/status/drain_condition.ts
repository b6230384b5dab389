/**
 * The Draining condition (status.ts): follower brokers whose pods are going, drained in Flux first
 * (spec.flux.drainGracePeriodSeconds, children/scripts/drain.ts), as the pods show it. Present only
 * when the spec asks for the drain, so other MiniClusters keep the conditions they always had.
 * An observation only: the pods of the Job that have a deletionTimestamp (the Job controller
 * removes the indexes at or above a smaller size; anyone may delete a pod), never a memory.
 *
 * - True, `RanksDraining`: the pods of those ranks wait in their preStop hook for the ranks' jobs
 *   to end (or already left, the pod not yet gone);
 * - True, `DrainGraceExpired`: a going pod's hook ran out of its grace period and cancelled the
 *   jobs still running on its rank: its termination message names them (a Warning Event);
 * - False, `NotDraining`: no broker's pod is going, or the Job has ended (its followers' pods go
 *   with the instance; their hooks find no broker to drain).
 *
 * The rank of a pod is its Job completion index, as in the MiniCluster's own hostlist; the lead
 * broker (index 0) never drains.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ContainerStatus, Pod } from "kubernetes-types/core/v1.d.ts";
import { DRAIN_GRACE_EXPIRED } from "../children/scripts/drain.ts";
import { jobCondition, jobSucceeded } from "../lifecycle/lifecycle.ts";

export const DRAINING = "Draining";
export const RANKS_DRAINING = "RanksDraining";
export const NOT_DRAINING = "NotDraining";
/** The reason when jobs were cancelled: also how the hook's termination message starts. */
export { DRAIN_GRACE_EXPIRED };

const COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index";
/** At most this many cancellation messages are quoted. */
const MAX_EXPIRED = 3;

/** A container that ended after its drain hook cancelled jobs (the cache keeps only those). */
export function drainGraceExpired(cs: ContainerStatus): boolean {
  return cs.state?.terminated?.message?.startsWith(`${DRAIN_GRACE_EXPIRED}:`) === true;
}

/** `2-3,5` for ranks 2, 3 and 5 (Flux's idset form). */
export function rankSet(ranks: readonly number[]): string {
  const sorted = [...new Set(ranks)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(",");
}

/**
 * The condition as [status, reason, message], or undefined when the spec does not drain (`grace`
 * undefined); `pods` are the Job's (the cache's view, cache_view.ts).
 */
export function drainCondition(
  grace: number | undefined,
  job: Job | undefined,
  pods: readonly Pod[],
): [boolean, string, string] | undefined {
  if (grace === undefined) return undefined;
  // The Job has ended (or is failing): the Flux instance ends with it, nothing is drained.
  if (jobSucceeded(job) || jobCondition(job, "Failed") || jobCondition(job, "FailureTarget")) {
    return [false, NOT_DRAINING, "the Job has ended"];
  }
  const going = pods.filter((p) =>
    p.metadata?.deletionTimestamp && rankOf(p) !== undefined && rankOf(p) !== 0 &&
    (!job?.metadata?.uid ||
      (p.metadata.ownerReferences ?? []).some((o) => o.uid === job.metadata?.uid))
  );
  if (going.length === 0) return [false, NOT_DRAINING, "no broker's pod is going"];
  const set = [...new Set(going.map((p) => rankOf(p)!))];
  const ranks = `${set.length === 1 ? "rank" : "ranks"} ${rankSet(set)}`;
  const size = job?.spec?.parallelism;
  const shrink = size !== undefined && going.every((p) => rankOf(p)! >= size)
    ? ` (the size is now ${size})`
    : "";
  const expired = going.flatMap((p) =>
    (p.status?.containerStatuses ?? []).filter(drainGraceExpired).map((cs) =>
      cs.state!.terminated!.message!.slice(DRAIN_GRACE_EXPIRED.length + 1).trim()
    )
  ).sort();
  if (expired.length > 0) {
    const named = expired.slice(0, MAX_EXPIRED).join("; ") +
      (expired.length > MAX_EXPIRED ? `; and ${expired.length - MAX_EXPIRED} more` : "");
    return [true, DRAIN_GRACE_EXPIRED, `draining ${ranks}${shrink}: ${named}`];
  }
  return [
    true,
    RANKS_DRAINING,
    `draining ${ranks}${shrink} in Flux: their pods go when the ranks' jobs have ended, ` +
    `or after ${grace}s, when those jobs are cancelled`,
  ];
}

function rankOf(pod: Pod): number | undefined {
  const index = pod.metadata?.labels?.[COMPLETION_INDEX_LABEL];
  return index === undefined || !/^\d+$/.test(index) ? undefined : Number(index);
}
