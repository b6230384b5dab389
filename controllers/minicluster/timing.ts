/**
 * The MiniCluster controller's delays, in one place because they depend on each other (and the
 * tests that wait for the operator to settle derive their windows from them). These are the
 * defaults: `--child-event-batch` and `--status-progress-interval` (operator_flags.ts) set the
 * batch and the progress interval, and the first-status delay follows a longer batch.
 *
 * - children's and pods' events are batched for `secondaryBatchMs` before their MiniCluster is
 *   reconciled, so a Job's pods turning Ready one by one cost one reconcile per burst;
 * - a Job created a moment ago has no pods, so its MiniCluster's status is first written
 *   `firstStatusDelayMs` later, when the batched events of its pods have arrived (not before them:
 *   at least `secondaryBatchMs`); a cluster Ready by then costs one status write instead of two;
 * - a status change that only reports progress (another pod ready) is written at most every
 *   `statusProgressIntervalMs` per MiniCluster, longer than a batch or it would save nothing;
 *   transitions are written at once;
 * - deletion waits up to `cleanupTimeoutMs` for the pods to go, looking every `cleanupPollMs`.
 */
export const TIMING = {
  secondaryBatchMs: 1_000,
  firstStatusDelayMs: 1_000,
  statusProgressIntervalMs: 3_000,
  cleanupTimeoutMs: 120_000,
  cleanupPollMs: 2_000,
} as const;

/**
 * The name `--pacing-off` switches the first-status delay off by (docs/write-pacing.md): the
 * status is then written by the reconcile that created the Job.
 */
export const FIRST_STATUS_DELAY = "first-status-delay";

/**
 * When the status writer (status/status_writer.ts) writes a changed status: a plain value handed
 * to it where it is made, from the operator's flags (operator_flags.ts).
 */
export interface StatusTiming {
  /** The first-status delay's switch: off, the status is written with the Job. */
  readonly firstStatusDelay: boolean;
  readonly firstStatusDelayMs: number;
  /** Progress-only changes are written at most this often per MiniCluster. */
  readonly progressIntervalMs: number;
}

/** The status timing the operator runs with unless its flags say otherwise. */
export const STATUS_TIMING: StatusTiming = {
  firstStatusDelay: true,
  firstStatusDelayMs: TIMING.firstStatusDelayMs,
  progressIntervalMs: TIMING.statusProgressIntervalMs,
};

/**
 * The longest the operator waits on purpose between two writes for one MiniCluster that is
 * converging (progress-only status aside): a silence longer than this plus the apiserver's own
 * latency means it has settled.
 */
export const LONGEST_DELIBERATE_PAUSE_MS = Math.max(
  TIMING.secondaryBatchMs,
  TIMING.firstStatusDelayMs,
);
