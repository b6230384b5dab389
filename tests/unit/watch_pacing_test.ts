// The list+watch stream's pacing policy (runtime/watch/watch_pacing.ts): its five rules, with the jitter
// fixed and the relist budget on a fake clock.
import assert from "node:assert/strict";
import { FakeClock } from "../../runtime/core/clock.ts";
import { RelistBudget } from "../../runtime/pacing/relist_budget.ts";
import { WatchPacing } from "../../runtime/watch/watch_pacing.ts";

const POLICY = { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 0.2 };
const ERROR = { type: "error" } as const;
const AT_ONCE = { type: "closed-at-once" } as const;
const FIRST_RELIST = { type: "relist", again: false } as const;
const RELIST_AGAIN = { type: "relist", again: true } as const;

/** No jitter: `random` 0.5 puts every delay at its middle. */
const pacing = (budget?: RelistBudget) => new WatchPacing(POLICY, budget, () => 0.5);

Deno.test("watch pacing: failures back off 0.8 s doubling to 30 s; progress starts over", () => {
  const p = pacing();
  const delays = [1, 2, 3, 4, 5, 6, 7].map(() => p.delay(ERROR));
  assert.deepEqual(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000]);
  assert.equal(p.attempts, 7);
  p.listed();
  assert.equal(p.attempts, 0);
  assert.equal(p.delay(ERROR), 800, "a list resets the error backoff");
  p.delay(ERROR);
  p.received();
  assert.equal(p.delay(ERROR), 800, "so does an event");
});

Deno.test("watch pacing: the jitter spreads a delay by ±20 % and never past the cap", () => {
  assert.equal(new WatchPacing(POLICY, undefined, () => 0).delay(ERROR), 640);
  assert.equal(new WatchPacing(POLICY, undefined, () => 1).delay(ERROR), 960);
  const high = new WatchPacing(POLICY, undefined, () => 1);
  const last = Array.from({ length: 10 }, () => high.delay(ERROR)).at(-1);
  assert.equal(last, 30_000);
});

Deno.test("watch pacing: a watch closed at once waits the error backoff, shared with failures", () => {
  const p = pacing();
  assert.deepEqual([p.delay(AT_ONCE), p.delay(ERROR), p.delay(AT_ONCE)], [800, 1600, 3200]);
});

Deno.test("watch pacing: the first relist in a row is immediate, later ones back off until an event", () => {
  const p = pacing();
  assert.deepEqual(
    [p.delay(FIRST_RELIST), p.delay(RELIST_AGAIN), p.delay(RELIST_AGAIN), p.delay(RELIST_AGAIN)],
    [0, 800, 1600, 3200],
  );
  p.listed();
  assert.equal(p.delay(RELIST_AGAIN), 6400, "a list alone does not end a 410 streak");
  assert.equal(p.delay(ERROR), 800, "the error backoff is its own");
  p.received();
  assert.equal(p.delay(RELIST_AGAIN), 800);
});

Deno.test("watch pacing: relists spend the shared budget and wait for a token when it is empty", async () => {
  const clock = new FakeClock();
  const budget = new RelistBudget(clock);
  budget.addStreams(2);
  const [a, b] = [pacing(budget), pacing(budget)];
  assert.deepEqual([a.relistWait(), b.relistWait()], [0, 0]);
  assert.equal(a.relistWait(), 5_000, "two streams refill one token every 5 s");
  await clock.advance(5_000);
  assert.deepEqual([b.relistWait(), a.relistWait()], [0, 5_000]);
  assert.equal(pacing().relistWait(), 0, "without a budget nothing waits");
});
