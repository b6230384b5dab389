/**
 * What a finished MiniCluster does next, as its spec says: `cleanup: true` deletes it once its Job
 * finished (Complete or Failed); `ttlSecondsAfterFinished` deletes it that long after its Job
 * finished, and until then asks to be reconciled when the time is up.
 *
 * Both read the Job's conditions, never a pod's phase: a lead-broker pod that failed (evicted,
 * preempted by a higher priority) is one the Job controller replaces while its backoffLimit lasts,
 * and only the Job's Failed condition says that it will not.
 */
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import { jobCondition, ttlRemainingMs } from "./lifecycle.ts";
import type { MiniClusterStores } from "../kinds/child_kinds.ts";
import { ownJob } from "../kinds/stores.ts";

/** Why the MiniCluster deletes itself: the Event's reason and message. */
export interface Deletion {
  reason: string;
  message: string;
}

export function afterFinish(
  mc: DefaultedMiniCluster,
  stores: Pick<MiniClusterStores, "jobs">,
  now: Date,
): { delete: Deletion } | { requeueAfterMs?: number } {
  const job = ownJob(stores, mc);
  const outcome = jobCondition(job, "Complete")
    ? "completed"
    : jobCondition(job, "Failed")
    ? "failed"
    : undefined;
  if (mc.spec.cleanup && outcome) {
    return {
      delete: {
        reason: "CleanupAfterCompletion",
        message: `the Job ${outcome} and spec.cleanup is true: deleting the MiniCluster`,
      },
    };
  }
  const ttl = mc.spec.ttlSecondsAfterFinished;
  const remaining = ttlRemainingMs(ttl, job, now);
  if (remaining !== 0) return { requeueAfterMs: remaining };
  return {
    delete: {
      reason: "TTLExpired",
      message:
        `the Job finished ${ttl}s ago (spec.ttlSecondsAfterFinished): deleting the MiniCluster`,
    },
  };
}
