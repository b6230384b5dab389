/**
 * A MiniCluster queued by Kueue: its `spec.jobLabels` name a LocalQueue (Kueue's documented way for
 * MiniClusters, kept as is). Kueue then owns the Job's suspension: its webhook suspends the Job at
 * creation and its admission resumes it, and it resumes any admitted Job someone else suspends. So
 * the Job of a queued MiniCluster never carries the operator's `spec.suspend`; `spec.suspend` is
 * carried out through Kueue's Workload instead (queue_workload.ts).
 */
import type { DefaultedMiniCluster } from "../../../api/mod.ts";

/** The label Kueue reads to queue a batch/v1 Job. */
export const KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name";

/** The LocalQueue the MiniCluster's Job is labelled for, if any. */
export function kueueQueueOf(mc: DefaultedMiniCluster): string | undefined {
  const queue = mc.spec.jobLabels?.[KUEUE_QUEUE_LABEL];
  return queue ? queue : undefined;
}
