/**
 * The reconcile as data: a list of named stages over one record, run by one loop that logs, times
 * and counts each stage (stage_metrics.ts).
 *
 * The record starts as what the reconcile is handed (the MiniCluster, its freshness fence, the
 * reconcile's context); each stage reads it and either stops the pipeline (stage.ts) or returns the
 * fields it adds, which make the next record. No record is changed once made (each is frozen), so a
 * stage sees exactly what the stages before it decided, and a later stage that corrects a field
 * (the queue stage's report) makes a new record with its own value.
 *
 * The list is built with `then`, which types each stage's record as the start with every earlier
 * stage's fields, so a stage that reads a field no earlier stage makes does not compile.
 */
import { StaleViewError } from "../../../runtime/controller/freshness_fence.ts";
import type { RuntimeLog } from "../../../runtime/core/log.ts";
import { proceed, type Stage } from "./stage.ts";
import type { StageMetrics, StageOutcome } from "./stage_metrics.ts";

/** A stage's body: the record in, the fields it adds (or replaces) out, or the pipeline's stop. */
export type StageBody<In, Add> = (record: Readonly<In>) => Stage<Add> | Promise<Stage<Add>>;

/** The record after a stage: the fields before it, those it returns replacing any of that name. */
type Extended<R, Add> = Omit<R, keyof Add> & Add;

interface NamedStage {
  readonly name: string;
  readonly body: StageBody<object, object>;
}

/** Where each stage is reported: the reconcile's log (debug) and the stage metrics. */
export interface StageWatch {
  readonly log: RuntimeLog;
  readonly metrics: StageMetrics;
}

export class Pipeline<In extends object, Out extends object = In> {
  private constructor(readonly stages: readonly NamedStage[]) {}

  /** No stage yet: the record is what `run` is handed. */
  static over<R extends object>(): Pipeline<R> {
    return new Pipeline<R>([]);
  }

  /** This list with `body` run last, as the stage `name`. */
  then<Add extends object>(
    name: string,
    body: StageBody<Out, Add>,
  ): Pipeline<In, Extended<Out, Add>> {
    const stage = { name, body: body as unknown as StageBody<object, object> };
    return new Pipeline<In, Extended<Out, Add>>([...this.stages, stage]);
  }

  /** Each stage in order until one stops: that Stop, or the last record. */
  async run(start: In, watch: StageWatch): Promise<Stage<Readonly<Out>>> {
    let record: object = Object.freeze({ ...start });
    for (const { name, body } of this.stages) {
      const end = await measured(name, watch, () => body(record), stageOutcome);
      if (end.stop) return end;
      record = Object.freeze({ ...record, ...end.value });
    }
    return proceed(record as Readonly<Out>);
  }
}

/**
 * Runs `step` as the stage `name`, logged, timed and counted however it ends (`outcome` names how
 * a result ends); what it throws is counted, then thrown on.
 */
export async function measured<T>(
  name: string,
  watch: StageWatch,
  step: () => T | Promise<T>,
  outcome: (result: T) => StageOutcome,
): Promise<T> {
  const began = performance.now();
  const report = (ended: StageOutcome) => {
    const seconds = (performance.now() - began) / 1000;
    watch.metrics.ran(name, ended, seconds);
    watch.log.debug("stage ran", {
      stage: name,
      outcome: ended,
      ms: Math.round(seconds * 1e6) / 1e3,
    });
  };
  try {
    const result = await step();
    report(outcome(result));
    return result;
  } catch (e) {
    report(e instanceof StaleViewError ? "stale" : "error");
    throw e;
  }
}

/** How a stage's result ends it: handed on, stopped, or stopped with a transient failure. */
function stageOutcome(end: Stage<unknown>): StageOutcome {
  if (!end.stop) return "continue";
  return end.retry === undefined ? "stop" : "retry";
}
