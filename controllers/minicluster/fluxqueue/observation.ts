/**
 * What the operator knows of a MiniCluster's Flux queue at one moment (the poller's, poller.ts),
 * and the FluxQueueObserved condition and status.fluxQueue it makes (status.ts). Pure.
 *
 * | reason             | status | when                                                                  |
 * | ------------------ | ------ | --------------------------------------------------------------------- |
 * | `Observed`         | True   | the last read of the lead broker's reporter gave a report              |
 * | `LeadNotRunning`   | False  | no lead broker's pod (Job index 0) runs with an IP: none yet, or done  |
 * | `WaitingForReport` | False  | it runs, its reporter has not answered yet (its start, up to a minute; |
 * |                    |        | or Flux has not answered the reporter yet)                             |
 * | `LeadUnreachable`  | False  | the read failed: no connection, no answer in time, an HTTP error       |
 * | `ReportInvalid`    | False  | something answered, but not a queue report                             |
 * | `FluxUnreadable`   | False  | the reporter runs but Flux did not answer it: Flux's error             |
 * | `ReportStale`      | False  | the reporter's last answer from Flux is older than three intervals     |
 *
 * The last four are problems: their Events are Warnings (events.ts).
 */
import type { FluxQueueSnapshot } from "./report.ts";

export type { FluxQueueSnapshot } from "./report.ts";

/** The condition type, present only for a MiniCluster with spec.flux.queueReport. */
export const FLUX_QUEUE_OBSERVED = "FluxQueueObserved";

export const OBSERVED = "Observed";
export const LEAD_NOT_RUNNING = "LeadNotRunning";
export const WAITING_FOR_REPORT = "WaitingForReport";
export const LEAD_UNREACHABLE = "LeadUnreachable";
export const REPORT_INVALID = "ReportInvalid";
export const FLUX_UNREADABLE = "FluxUnreadable";
export const REPORT_STALE = "ReportStale";

export type FluxQueueReason =
  | typeof OBSERVED
  | typeof LEAD_NOT_RUNNING
  | typeof WAITING_FOR_REPORT
  | typeof LEAD_UNREACHABLE
  | typeof REPORT_INVALID
  | typeof FLUX_UNREADABLE
  | typeof REPORT_STALE;

/** The reasons that say something is wrong: their Events are Warnings. */
export const FLUX_QUEUE_PROBLEMS: ReadonlySet<string> = new Set([
  LEAD_UNREACHABLE,
  REPORT_INVALID,
  FLUX_UNREADABLE,
  REPORT_STALE,
]);

/** One observation: the condition's reason and message, and the report when there is one. */
export interface FluxQueueObservation {
  readonly reason: FluxQueueReason;
  readonly message: string;
  /** Only with `Observed`. */
  readonly snapshot?: FluxQueueSnapshot;
  /**
   * Nothing of this lead pod read yet by this process (it just started, or took the lead): a
   * status that already shows the queue keeps what it shows until the first read, so a restart
   * of the operator flaps no condition and writes nothing (status.ts).
   */
  readonly unread?: boolean;
}

/** The FluxQueueObserved condition of an observation: [True?, reason, message]. */
export function fluxQueueCondition(o: FluxQueueObservation): [boolean, string, string] {
  return [o.reason === OBSERVED, o.reason, o.message];
}

/** status.fluxQueue: the report while it is current, else nothing. */
export function fluxQueueStatus(o: FluxQueueObservation): FluxQueueSnapshot | undefined {
  return o.reason === OBSERVED ? o.snapshot : undefined;
}

/** Whether two observations would show differently in the status. */
export function sameObservation(
  a: FluxQueueObservation | undefined,
  b: FluxQueueObservation | undefined,
): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.reason === b.reason && a.message === b.message && !a.unread === !b.unread &&
    JSON.stringify(a.snapshot) === JSON.stringify(b.snapshot);
}

/** The message of an observed report: the numbers in one line. */
export function observedMessage(s: FluxQueueSnapshot, pod: string): string {
  return `jobs: ${s.jobs.pending} pending, ${s.jobs.running} running; nodes: ${s.nodes.free} ` +
    `free, ${s.nodes.allocated} allocated, ${s.nodes.down} down of ${s.nodes.total}; ` +
    `pending jobs ask for ${s.pendingNodes} nodes (as reported by the lead broker's pod ${pod})`;
}
