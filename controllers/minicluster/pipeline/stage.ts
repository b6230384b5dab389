/**
 * What each stage of the MiniCluster reconcile (pipeline.ts, reconciler.ts) returns: carry on with
 * the fields it adds to the record, or stop the pipeline with what the last stage, finish, is to do.
 *
 * A Stop carries everything the end of a reconcile can do, as data: the status report to write
 * (none: the status is left as it is), when to look again, the error to throw for the controller's
 * backoff once the report is written, and the self-deletion of a finished MiniCluster. Finish is the
 * only place that writes the status, the condition Events or the MiniCluster itself, and it does so
 * behind the freshness fence.
 */
import type { Deletion } from "../lifecycle/finished.ts";
import type { StatusReport } from "../status/status_writer.ts";

/** The stage's fields, added to the record the next stage reads. */
export interface Continue<T> {
  readonly stop: false;
  readonly value: T;
}

/** The end of the pipeline: what finish writes and when the MiniCluster is looked at again. */
export interface Stop {
  readonly stop: true;
  /** The status to write (if it changed and is due); undefined leaves the status alone. */
  readonly report?: StatusReport;
  /** Reconcile again after this many ms at the latest. */
  readonly requeueAfterMs?: number;
  /** A transient failure: thrown after the report, so the controller retries with backoff. */
  readonly retry?: unknown;
  /** The MiniCluster finished and its spec says to go: deleted instead of a status write. */
  readonly deletion?: Deletion;
}

export type Stage<T> = Continue<T> | Stop;

/** Carry on with `value`. */
export function proceed<T>(value: T): Continue<T> {
  return { stop: false, value };
}

/** End the pipeline: write `report` (if any), look again after `requeueAfterMs` (if set). */
export function stop(
  report?: StatusReport,
  requeueAfterMs?: number,
  extra: Pick<Stop, "retry" | "deletion"> = {},
): Stop {
  return { stop: true, report, requeueAfterMs, ...extra };
}
