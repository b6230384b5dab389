/**
 * The first-status delay on /metrics: how long a new MiniCluster's first status write actually
 * waited, from the reconcile that created its Job to the write. The delay itself is a pacing rule
 * (timing.ts, `--pacing-off=first-status-delay`); what a MiniCluster waits also counts the queue,
 * the batch of its pods' events and the write slots, so the histogram shows whether the rule costs
 * what it is meant to (about `firstStatusDelayMs`) or more.
 */
import type { Registry } from "../../../runtime/metrics/metrics.ts";

export const FIRST_STATUS_DELAY_METRIC = "minicluster_first_status_delay_seconds";

export class FirstStatusDelays {
  readonly #seconds;

  constructor(registry: Registry) {
    this.#seconds = registry.histogram({
      name: FIRST_STATUS_DELAY_METRIC,
      help: "Seconds from the reconcile that created a MiniCluster's Job to its first status " +
        "write: the first-status delay (0 with --pacing-off=first-status-delay) and any wait " +
        "for the queue, the pods' batched events and a write slot.",
      // 0 (the delay off) .. a minute (a queue thousands deep); the default delay is 1 s.
      buckets: [0, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60],
    });
  }

  /** A first status was written `seconds` after its Job was created. */
  observe(seconds: number): void {
    this.#seconds.observe(seconds);
  }
}
