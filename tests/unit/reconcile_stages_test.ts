// The reconcile's stages on /metrics (controllers/minicluster/pipeline/pipeline.ts, stage_metrics.ts), as the
// operator wires them: every stage of a reconcile is timed and counted by how it ended, so where a
// reconcile spends its time and where it stops shows by stage.
import assert from "node:assert/strict";
import { ApiError } from "../../runtime/client/errors.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import { FakeOperator } from "../../testing/fake_operator.ts";

const STAGES = ["validate", "sizes", "build", "police", "dependents", "queue", "finish"];

/** The samples of `metric` as "labels value" lines, from the text /metrics serves. */
function samples(op: FakeOperator, metric: string): Map<string, number> {
  const lines = op.registry.render().split("\n").filter((l) => l.startsWith(`${metric}{`));
  return new Map(lines.map((l) => {
    const [series, value] = l.slice(metric.length).split(" ");
    return [series, Number(value)];
  }));
}

Deno.test("reconcile stages: every stage of a MiniCluster's reconcile is timed and counted", async () => {
  const op = new FakeOperator();
  await op.create("flux");
  await op.reconcile("flux");
  const ends = samples(op, "reconcile_stage_total");
  for (const stage of STAGES.slice(0, -1)) {
    assert.equal(ends.get(`{stage="${stage}",outcome="continue"}`), 1, stage);
  }
  assert.equal(ends.get(`{stage="finish",outcome="done"}`), 1);
  assert.equal(ends.size, STAGES.length, [...ends.keys()].join(" "));
  const counts = samples(op, "reconcile_stage_duration_seconds_count");
  assert.deepEqual([...counts.keys()].sort(), STAGES.map((s) => `{stage="${s}"}`).sort());
  assert.ok([...counts.values()].every((n) => n === 1));
});

Deno.test("reconcile stages: a stop is counted at its stage and the later stages do not run", async () => {
  const op = new FakeOperator();
  await op.create("bad", {
    containers: [{ image: "app", volumes: { "Not A Label": { path: "/data", emptyDir: true } } }],
  });
  await op.reconcile("bad");
  assert.equal(op.condition("bad", "SpecInvalid")?.reason, "ValidationFailed");
  const ends = samples(op, "reconcile_stage_total");
  assert.deepEqual(Object.fromEntries(ends), {
    '{stage="validate",outcome="stop"}': 1,
    '{stage="finish",outcome="done"}': 1,
  });
});

Deno.test("reconcile stages: a transient failure is a retry of its stage and a throw of finish", async () => {
  const op = new FakeOperator();
  await op.create("flux");
  await op.converge("flux");
  op.api.react((r) =>
    r.verb === "apply" && r.resource === "configmaps"
      ? new ApiError({ code: 500, reason: "InternalError", message: "etcd timeout" })
      : undefined
  );
  await op.api.patch(ConfigMaps, "ns", "flux-entrypoint", { data: { "wait-0": "x" } }, "merge");
  op.sync();
  const before = samples(op, "reconcile_stage_total");
  await assert.rejects(() => op.reconcile("flux"), /500 InternalError/);
  const after = samples(op, "reconcile_stage_total");
  const grew = (series: string) => (after.get(series) ?? 0) - (before.get(series) ?? 0);
  assert.equal(grew('{stage="dependents",outcome="retry"}'), 1);
  assert.equal(grew('{stage="finish",outcome="error"}'), 1);
  assert.equal(grew('{stage="queue",outcome="continue"}'), 0);
});
