// The MiniCluster controller's timing switches (controllers/minicluster/operator_flags.ts):
// --status-progress-interval and --child-event-batch parsed, bounded, and reaching the status
// writer and the controller's batched secondaries through the same wiring as mod.ts.
import assert from "node:assert/strict";
import { controllerSettings, parseOptions } from "../../controllers/minicluster/operator_flags.ts";
import { STATUS_TIMING, TIMING } from "../../controllers/minicluster/timing.ts";
import { CHILD_KINDS } from "../../controllers/minicluster/kinds/child_kinds.ts";
import { FakeOperator } from "../../testing/fake_operator.ts";

Deno.test("timing flags: the defaults are today's timing; durations from flags and the environment", () => {
  const defaults = parseOptions([]);
  assert.equal(defaults.statusProgressIntervalMs, TIMING.statusProgressIntervalMs);
  assert.equal(defaults.childEventBatchMs, TIMING.secondaryBatchMs);
  assert.deepEqual(controllerSettings(defaults).statusTiming, STATUS_TIMING);
  assert.equal(controllerSettings(defaults).childEventBatchMs, TIMING.secondaryBatchMs);

  const set = parseOptions(["--status-progress-interval=10s", "--child-event-batch=250ms"]);
  assert.equal(set.statusProgressIntervalMs, 10_000);
  assert.equal(set.childEventBatchMs, 250);
  const env = parseOptions([], {
    OPERATOR_STATUS_PROGRESS_INTERVAL: "0",
    OPERATOR_CHILD_EVENT_BATCH: "2s",
  });
  assert.equal(env.statusProgressIntervalMs, 0, "0: every change at once");
  assert.equal(env.childEventBatchMs, 2_000);
  assert.equal(
    controllerSettings(env).statusTiming?.firstStatusDelayMs,
    2_000,
    "the first status waits at least one batch",
  );
});

Deno.test("timing flags: bad values are refused with a message naming the flag", () => {
  assert.throws(
    () => parseOptions(["--status-progress-interval=soon"]),
    /--status-progress-interval: invalid duration "soon"/,
  );
  assert.throws(
    () => parseOptions(["--child-event-batch=-1s"]),
    /--child-event-batch: invalid duration "-1s"/,
  );
  assert.throws(
    () => parseOptions(["--status-progress-interval=11m"]),
    /--status-progress-interval must be at most 10m/,
  );
  assert.throws(
    () => parseOptions([], { OPERATOR_CHILD_EVENT_BATCH: "90s" }),
    /--child-event-batch must be at most 1m/,
  );
  assert.equal(parseOptions(["--child-event-batch=1m"]).childEventBatchMs, 60_000, "1m is allowed");
});

/** A MiniCluster of 4 brokers whose first status is written (0 of 4 ready), on `flags`. */
async function started(flags: string[]): Promise<FakeOperator> {
  const op = new FakeOperator({ flags });
  await op.create("flux", { size: 4 });
  await op.converge("flux");
  op.seedPods("flux", 4, 0);
  await op.converge("flux");
  assert.equal(op.miniCluster("flux")?.status?.readyPods ?? 0, 0);
  op.requestsSince();
  return op;
}

Deno.test("timing flags: --status-progress-interval reaches the status writer", async () => {
  for (const [flag, wait] of [[undefined, 3_000], ["10s", 10_000]] as const) {
    const op = await started(flag ? [`--status-progress-interval=${flag}`] : []);
    op.time += 1_000;
    op.seedPods("flux", 4, 1);
    const action = await op.reconcile("flux");
    assert.deepEqual(op.writesSince(), [], `${flag ?? "default"}: progress waits`);
    assert.deepEqual(action, { requeueAfter: wait - 1_000 });
  }
  const eager = await started(["--status-progress-interval=0"]);
  eager.seedPods("flux", 4, 1);
  await eager.reconcile("flux");
  assert.deepEqual(eager.writesSince(), ["apply miniclusters.flux-framework.org/status flux"]);
  assert.equal(eager.miniCluster("flux")?.status?.readyPods, 1, "0: written at once");
});

Deno.test("timing flags: --child-event-batch reaches the controller's batched children and the first status", async () => {
  const batched = new Set(CHILD_KINDS.filter((row) => row.batched).map((row) => row.key));
  assert.ok(batched.size > 0);
  for (
    const [flags, batch, firstStatus] of [
      [[], TIMING.secondaryBatchMs, TIMING.firstStatusDelayMs],
      [["--child-event-batch=250ms"], 250, TIMING.firstStatusDelayMs],
      [["--child-event-batch=5s"], 5_000, 5_000],
      [["--child-event-batch=0"], 0, TIMING.firstStatusDelayMs],
    ] as const
  ) {
    const op = new FakeOperator({ flags: [...flags] });
    const delays = op.definition.secondaries!.map((s) => s.delayMs);
    assert.deepEqual(
      delays,
      CHILD_KINDS.map((row) => batched.has(row.key) ? batch : undefined),
      `${flags.join(" ") || "default"}: the batched kinds wait ${batch} ms`,
    );
    await op.create("flux");
    assert.deepEqual(await op.reconcile("flux"), { requeueAfter: firstStatus });
  }
});
