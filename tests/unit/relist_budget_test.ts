import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { FakeClock } from "../../runtime/clock.ts";
import { RelistBudget } from "../../runtime/relist_budget.ts";

Deno.test("relist budget: a burst of one relist per stream, then one per stream per 30 s", async () => {
  const clock = new FakeClock();
  const budget = new RelistBudget(clock);
  budget.addStreams(3);
  budget.addStreams(1);
  assertEquals([1, 2, 3, 4].map(() => budget.reserve()), [0, 0, 0, 0]);
  // Four streams refill a token every 7.5 s; queued reservations wait in order.
  assertEquals([budget.reserve(), budget.reserve()], [7_500, 15_000]);
  await clock.advance(15_000);
  assertEquals(budget.reserve(), 7_500);
});

Deno.test("relist budget: refills up to the burst and never beyond", async () => {
  const clock = new FakeClock();
  const budget = new RelistBudget(clock);
  budget.addStreams(2);
  budget.reserve();
  budget.reserve();
  await clock.advance(10 * 60_000);
  assertEquals([budget.reserve(), budget.reserve(), budget.reserve()], [0, 0, 15_000]);
});

Deno.test("relist budget: with no streams registered nothing waits", () => {
  const budget = new RelistBudget(new FakeClock());
  assertEquals(budget.reserve(), 0);
});
