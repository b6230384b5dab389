/**
 * How the Job is queued (children/queue.ts), and the queue stage of the reconcile (pipeline.ts):
 * the Workload of a Job Kueue tracks follows spec.suspend (queue_workload.ts), and the report says
 * how the Job is queued, and why a labelled Job Kueue does not track is suspended by the operator
 * itself. It never stops the pipeline.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import type { Problem } from "../../../runtime/controller/dependents.ts";
import type { FreshnessFence } from "../../../runtime/controller/freshness_fence.ts";
import { jobQueueLabel, queueLabelChange } from "../children/queue.ts";
import {
  followSuspend,
  type QueueReport,
  queueReport,
  readQueueWorkload,
  type WorkloadRead,
} from "./queue_workload.ts";
import { proceed, type Stage } from "../pipeline/stage.ts";
import type { StatusReport } from "../status/status_writer.ts";

/** How the Job is queued, as the build stage read it. */
export interface Queueing {
  /** Kueue's queue label the Job carries (or is created with); null: none. */
  readonly label: string | null;
  /** The spec's queue label the live Job cannot take. */
  readonly change?: Problem;
  /** Kueue's Workload of the Job, read while the Job is suspended or the spec suspends it. */
  readonly read?: WorkloadRead;
}

/**
 * The Job's queue label (the live Job's once it exists), and, while the Job is suspended or the
 * spec suspends it, Kueue's Workload of it, which decides whether spec.suspend goes through the
 * Workload or on the Job (queue_workload.ts). Only reads.
 */
export async function readQueueing(
  client: ApiClient,
  spec: DefaultedMiniCluster,
  running: Job | undefined,
): Promise<Queueing> {
  const label = jobQueueLabel(spec, running);
  const change = queueLabelChange(spec, running);
  const base = { label, ...(change ? { change } : {}) };
  if (!running || (spec.spec.suspend !== true && running.spec?.suspend !== true)) return base;
  return { ...base, read: await readQueueWorkload(client, running) };
}

/** Replaces `report` with one that says how the Job is queued (the same one when it is not). */
export function queueStage(client: ApiClient): (record: {
  readonly spec: DefaultedMiniCluster;
  readonly queueing: Queueing;
  readonly report: StatusReport;
  readonly fence: FreshnessFence;
}) => Promise<Stage<{ report: StatusReport }>> {
  return async ({ spec, queueing, report, fence }) => {
    const { label, read } = queueing;
    const reported = (queue: QueueReport) => proceed({ report: { ...report, queue } });
    const workload = read?.workload;
    if (workload) {
      const queue = label ?? workload.spec?.queueName ?? "";
      const suspend = spec.spec.suspend === true;
      return reported(queueReport(queue, await followSuspend(client, workload, suspend, fence)));
    }
    if (!label) return proceed({ report });
    if (!read || spec.spec.suspend !== true) return reported({ queue: label });
    return reported({ queue: label, untracked: read.served ? "none" : "unserved" });
  };
}
