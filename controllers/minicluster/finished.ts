/**
 * What a finished MiniCluster does next, as its spec says: `cleanup: true` deletes it once the lead
 * broker finished (the Go operator's behaviour); `ttlSecondsAfterFinished` deletes it that long
 * after its Job finished, and until then asks to be reconciled when the time is up.
 */
import type { DefaultedMiniCluster } from "../../api/mod.ts";
import { ttlRemainingMs } from "./lifecycle.ts";
import { brokerFinished } from "./status.ts";
import { type MiniClusterStores, ownJob, podsOf } from "./stores.ts";

/** Why the MiniCluster deletes itself: the Event's reason and message. */
export interface Deletion {
  reason: string;
  message: string;
}

export function afterFinish(
  mc: DefaultedMiniCluster,
  stores: Pick<MiniClusterStores, "jobs" | "pods">,
  now: Date,
): { delete: Deletion } | { requeueAfterMs?: number } {
  if (mc.spec.cleanup && brokerFinished(podsOf(stores, mc), ownJob(stores, mc))) {
    return {
      delete: {
        reason: "CleanupAfterCompletion",
        message: "the lead broker finished and spec.cleanup is true: deleting the MiniCluster",
      },
    };
  }
  const ttl = mc.spec.ttlSecondsAfterFinished;
  const remaining = ttlRemainingMs(ttl, ownJob(stores, mc), now);
  if (remaining !== 0) return { requeueAfterMs: remaining };
  return {
    delete: {
      reason: "TTLExpired",
      message:
        `the Job finished ${ttl}s ago (spec.ttlSecondsAfterFinished): deleting the MiniCluster`,
    },
  };
}
