/**
 * The reconcile's stages on /metrics: how long each one takes and how each one ends, so a slow or
 * stopping stage shows by name (docs/architecture.md lists them with the other metrics).
 */
import { exponentialBuckets, type Registry } from "../../../runtime/metrics/metrics.ts";

/**
 * How a stage ended: it handed its value on (`continue`), stopped the pipeline (`stop`), stopped it
 * with a transient failure for the backoff (`retry`), threw because the view of the MiniCluster is
 * behind the live one (`stale`) or threw anything else (`error`); finish, the end of every path,
 * ends `done` when it returns.
 */
export type StageOutcome = "continue" | "stop" | "retry" | "stale" | "error" | "done";

export class StageMetrics {
  readonly #seconds;
  readonly #ends;

  constructor(registry: Registry) {
    this.#seconds = registry.histogram({
      name: "reconcile_stage_duration_seconds",
      help: "Seconds each stage of a reconcile took, by stage.",
      labelNames: ["stage"],
      // 0.1 ms (a stage without IO) .. ~26 s (a stage waiting for write slots)
      buckets: exponentialBuckets(0.0001, 4, 10),
    });
    this.#ends = registry.counter({
      name: "reconcile_stage_total",
      help: "Stages run, by stage and how they ended (continue, stop, retry, stale, error, done).",
      labelNames: ["stage", "outcome"],
    });
  }

  /** One run of `stage` that ended `outcome` after `seconds`. */
  ran(stage: string, outcome: StageOutcome, seconds: number): void {
    this.#seconds.observe({ stage }, seconds);
    this.#ends.inc({ stage, outcome });
  }
}
