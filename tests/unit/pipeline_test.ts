// The reconcile's pipeline runner (controllers/minicluster/pipeline/pipeline.ts): stages run in their order
// over one record that no stage changes, a Stop ends the run, and each stage is logged, timed and
// counted on /metrics (stage_metrics.ts) however it ends, a throw included.
import assert from "node:assert/strict";
import { Pipeline } from "../../controllers/minicluster/pipeline/pipeline.ts";
import { proceed, stop } from "../../controllers/minicluster/pipeline/stage.ts";
import { StageMetrics } from "../../controllers/minicluster/pipeline/stage_metrics.ts";
import { StaleViewError } from "../../runtime/controller/freshness_fence.ts";
import type { RuntimeLog } from "../../runtime/core/log.ts";
import { type Counter, type Histogram, Registry } from "../../runtime/metrics/metrics.ts";

/** A log that keeps its debug records, and the stage metrics on a registry of their own. */
function watched() {
  const registry = new Registry();
  const records: { msg: string; fields?: Record<string, unknown> }[] = [];
  const log: RuntimeLog = {
    debug: (msg, fields) => records.push({ msg, fields }),
    info() {},
    warn() {},
    error() {},
  };
  const seconds = () => registry.get("reconcile_stage_duration_seconds") as Histogram;
  const ends = () => registry.get("reconcile_stage_total") as Counter;
  return { watch: { log, metrics: new StageMetrics(registry) }, records, registry, seconds, ends };
}

Deno.test("pipeline: stages run in their order, each over the record the ones before made", async () => {
  const ran: string[] = [];
  const pipeline = Pipeline.over<{ n: number }>()
    .then("double", (r) => {
      ran.push("double");
      return proceed({ doubled: r.n * 2 });
    })
    .then("add", async (r) => {
      ran.push("add");
      await Promise.resolve();
      return proceed({ sum: r.n + r.doubled });
    })
    .then("replace", (r) => {
      ran.push("replace");
      return proceed({ n: r.sum * 10 });
    });
  assert.deepEqual(pipeline.stages.map((s) => s.name), ["double", "add", "replace"]);
  const { watch } = watched();
  const end = await pipeline.run({ n: 3 }, watch);
  assert.deepEqual(ran, ["double", "add", "replace"]);
  assert.equal(end.stop, false);
  assert.deepEqual(end.stop ? undefined : { ...end.value }, { n: 90, doubled: 6, sum: 9 });
});

Deno.test("pipeline: no stage can change the record it is handed", async () => {
  const start = { n: 1 };
  const seen: object[] = [];
  const pipeline = Pipeline.over<{ n: number }>()
    .then("first", (r) => {
      seen.push(r);
      (r as { n: number }).n = 2;
      return proceed({ m: 1 });
    });
  const { watch } = watched();
  await assert.rejects(() => pipeline.run(start, watch), TypeError);
  assert.equal(start.n, 1, "the caller's object is copied, not frozen in place");
  assert.ok(Object.isFrozen(seen[0]));
});

Deno.test("pipeline: a Stop ends the run, and no later stage runs", async () => {
  const ran: string[] = [];
  const report = { requestedSize: 4 };
  const pipeline = Pipeline.over<{ n: number }>()
    .then("first", () => {
      ran.push("first");
      return proceed({ m: 1 });
    })
    .then("stops", () => {
      ran.push("stops");
      return stop(report, 5_000);
    })
    .then("never", () => {
      ran.push("never");
      return proceed({ k: 1 });
    });
  const { watch, seconds, ends } = watched();
  const end = await pipeline.run({ n: 1 }, watch);
  assert.deepEqual(ran, ["first", "stops"]);
  assert.ok(end.stop);
  assert.equal(end.report, report);
  assert.equal(end.requeueAfterMs, 5_000);
  assert.equal(ends().get({ stage: "first", outcome: "continue" }), 1);
  assert.equal(ends().get({ stage: "stops", outcome: "stop" }), 1);
  assert.equal(seconds().count({ stage: "never" }), 0);
});

Deno.test("pipeline: each stage is timed, counted by how it ended and logged", async () => {
  const retry = new Error("throttled");
  const pipeline = Pipeline.over<{ n: number }>()
    .then("slow", async () => {
      await new Promise((r) => setTimeout(r, 20));
      return proceed({ m: 1 });
    })
    .then("fails", () => stop(undefined, undefined, { retry }));
  const { watch, records, registry, seconds, ends } = watched();
  for (let i = 0; i < 2; i++) {
    const end = await pipeline.run({ n: i }, watch);
    assert.ok(end.stop && end.retry === retry);
  }
  assert.equal(seconds().count({ stage: "slow" }), 2);
  assert.equal(seconds().count({ stage: "fails" }), 2);
  assert.equal(ends().get({ stage: "slow", outcome: "continue" }), 2);
  assert.equal(ends().get({ stage: "fails", outcome: "retry" }), 2);
  const text = registry.render();
  const slowSum = Number(
    /reconcile_stage_duration_seconds_sum\{stage="slow"\} (\S+)/.exec(text)?.[1],
  );
  assert.ok(slowSum >= 0.035, `two 20 ms stages took ${slowSum} s`);
  assert.deepEqual(
    records.map((r) => [r.msg, r.fields?.stage, r.fields?.outcome]),
    [
      ["stage ran", "slow", "continue"],
      ["stage ran", "fails", "retry"],
      ["stage ran", "slow", "continue"],
      ["stage ran", "fails", "retry"],
    ],
  );
  assert.ok((records[0].fields?.ms as number) >= 15, `ms: ${records[0].fields?.ms}`);
});

Deno.test("pipeline: a stage that throws is counted, its error thrown on, the rest not run", async () => {
  const boom = new Error("boom");
  let after = 0;
  const throwing = (e: Error) =>
    Pipeline.over<{ n: number }>()
      .then("throws", () => Promise.reject(e))
      .then("after", () => {
        after++;
        return proceed({ m: 1 });
      });
  const { watch, seconds, ends } = watched();
  await assert.rejects(() => throwing(boom).run({ n: 1 }, watch), (e) => e === boom);
  const stale = new StaleViewError("behind");
  await assert.rejects(() => throwing(stale).run({ n: 1 }, watch), (e) => e === stale);
  assert.equal(after, 0);
  assert.equal(ends().get({ stage: "throws", outcome: "error" }), 1);
  assert.equal(ends().get({ stage: "throws", outcome: "stale" }), 1);
  assert.equal(seconds().count({ stage: "throws" }), 2);
  assert.equal(seconds().count({ stage: "after" }), 0);
});
