// The first-status delay on /metrics (controllers/minicluster/status/first_status_metric.ts): how
// long a new MiniCluster's first status write actually waited after the reconcile that created its
// Job, observed on the fake operator's clock.
import assert from "node:assert/strict";
import { FIRST_STATUS_DELAY_METRIC } from "../../controllers/minicluster/status/first_status_metric.ts";
import { TIMING } from "../../controllers/minicluster/timing.ts";
import { FakeOperator } from "../../testing/fake_operator.ts";
import { parseMetrics } from "../../testing/metrics_text.ts";

const STATUS = "apply miniclusters.flux-framework.org/status flux";

/** The histogram's count and sum, and the count of its `le` bucket, as /metrics renders them. */
function observed(op: FakeOperator, le?: string) {
  const samples = parseMetrics(op.registry.render());
  const value = (suffix: string, labels: Record<string, string> = {}) =>
    samples.find((s) =>
      s.name === `${FIRST_STATUS_DELAY_METRIC}_${suffix}` &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v)
    )?.value ?? 0;
  return { count: value("count"), sum: value("sum"), bucket: le ? value("bucket", { le }) : 0 };
}

Deno.test("first-status metric: the wait a MiniCluster's first status actually had, once", async () => {
  const op = new FakeOperator();
  assert.match(
    op.registry.render(),
    new RegExp(`^# HELP ${FIRST_STATUS_DELAY_METRIC} Seconds from the reconcile that created`, "m"),
  );
  await op.create("flux", { size: 2 });
  op.requestsSince();
  assert.deepEqual(await op.reconcile("flux"), { requeueAfter: TIMING.firstStatusDelayMs });
  op.sync();
  assert.ok(!op.writesSince().includes(STATUS), "the first status waits");
  assert.equal(observed(op).count, 0, "nothing observed before the write");

  // The requeue comes later than asked (a busy queue): the histogram shows the real wait.
  op.seedPods("flux", 2, 0);
  op.time += 1_700;
  await op.reconcile("flux");
  op.sync();
  assert.ok(op.writesSince().includes(STATUS));
  let m = observed(op, "2");
  assert.equal(m.count, 1);
  assert.equal(m.sum, 1.7);
  assert.equal(observed(op, "1.5").bucket, 0, "not within 1.5 s");
  assert.equal(m.bucket, 1, "within 2 s");

  // Later status writes are not first ones.
  op.seedPods("flux", 2, 2);
  op.time += 5_000;
  await op.reconcile("flux");
  assert.ok(op.writesSince().includes(STATUS), "Ready: written");
  m = observed(op);
  assert.equal(m.count, 1, "observed once per Job");
});

Deno.test("first-status metric: 0 with --pacing-off=first-status-delay, the status written with the Job", async () => {
  const op = new FakeOperator({ flags: ["--pacing-off=first-status-delay"] });
  await op.create("flux");
  op.requestsSince();
  await op.reconcile("flux");
  assert.equal(op.writesSince().at(-1), STATUS);
  const m = observed(op, "0");
  assert.deepEqual([m.count, m.sum, m.bucket], [1, 0, 1]);
});
