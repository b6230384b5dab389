/**
 * A MiniCluster's Job queued by Kueue. A Job is queued when it carries Kueue's queue label: from
 * `spec.jobLabels` (Kueue's documented way for MiniClusters), or added by Kueue's webhook when the
 * Job was created in a namespace with a LocalQueue named `default` (LocalQueueDefaulting). So once
 * the Job exists its own label is what counts, not the spec's: the operator keeps the label the Job
 * was created with, and a different one in the spec is reported (`QueueFixed`) rather than written:
 * Kueue refuses to move a running Job between queues, and refuses to drop the label in a namespace
 * with a default queue.
 *
 * Kueue owns a queued Job's suspension: its webhook suspends the Job at creation and its admission
 * resumes it, and it resumes any admitted Job someone else suspends. So the user's `spec.suspend`
 * of a Job that Kueue tracks (it has a Workload) goes through that Workload (queue_workload.ts),
 * never the Job's `spec.suspend`.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";

/** The label Kueue reads to queue a batch/v1 Job. */
export const KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name";

/** The LocalQueue the MiniCluster's spec labels its Job for, if any. */
export function kueueQueueOf(mc: DefaultedMiniCluster): string | undefined {
  const queue = mc.spec.jobLabels?.[KUEUE_QUEUE_LABEL];
  return queue ? queue : undefined;
}

/** The LocalQueue a live Job is labelled for, if any. */
export function jobQueueOf(job: Job | undefined): string | undefined {
  const queue = job?.metadata?.labels?.[KUEUE_QUEUE_LABEL];
  return queue ? queue : undefined;
}

/**
 * The queue label the Job is built with: the live Job's once it exists (whoever put it there),
 * else the spec's. Null: the Job has none and gets none.
 */
export function jobQueueLabel(mc: DefaultedMiniCluster, live: Job | undefined): string | null {
  return (live ? jobQueueOf(live) : kueueQueueOf(mc)) ?? null;
}

/**
 * The spec's queue label differs from the one the live Job was created with: what the status says
 * of it (the label stays as it is), or undefined.
 */
export function queueLabelChange(
  mc: DefaultedMiniCluster,
  live: Job | undefined,
): { reason: string; message: string } | undefined {
  if (!live) return undefined;
  const want = kueueQueueOf(mc);
  const have = jobQueueOf(live);
  if (want === undefined || want === have) return undefined;
  const name = live.metadata?.name;
  const was = have ? `queue ${have}` : "no queue";
  return {
    reason: "QueueFixed",
    message: `spec.jobLabels[${KUEUE_QUEUE_LABEL}] is ${want}, but the Job ${name} was created ` +
      `with ${was}, and a Job's queue is fixed once it exists (Kueue moves no running Job between ` +
      "queues); it applies when the MiniCluster is created again",
  };
}
