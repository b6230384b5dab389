import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { FakeClock } from "../../runtime/core/clock.ts";
import { RelistBudget } from "../../runtime/pacing/relist_budget.ts";

Deno.test("relist budget: a burst of one relist per stream, then one per stream per 10 s", async () => {
  const clock = new FakeClock();
  const budget = new RelistBudget(clock);
  budget.addStreams(3);
  budget.addStreams(1);
  assertEquals([1, 2, 3, 4].map(() => budget.take()), [0, 0, 0, 0]);
  // Four streams refill a token every 2.5 s; asking without a token takes nothing (no debt).
  assertEquals([budget.take(), budget.take()], [2_500, 2_500]);
  await clock.advance(2_500);
  assertEquals([budget.take(), budget.take()], [0, 2_500]);
});

Deno.test("relist budget: refills up to the burst and never beyond", async () => {
  const clock = new FakeClock();
  const budget = new RelistBudget(clock);
  budget.addStreams(2);
  budget.take();
  budget.take();
  await clock.advance(10 * 60_000);
  assertEquals([budget.take(), budget.take(), budget.take()], [0, 0, 5_000]);
});

Deno.test("relist budget: with no streams registered nothing waits", () => {
  const budget = new RelistBudget(new FakeClock());
  assertEquals(budget.take(), 0);
});
