import assert from "node:assert/strict";
import { Backoff, backoffDelay, WATCH_BACKOFF, withJitter } from "../../runtime/pacing/backoff.ts";
import { FakeClock, sleep } from "../../runtime/core/clock.ts";

Deno.test("backoff: doubles from the initial delay and stops at the cap", () => {
  const policy = { initialMs: 800, maxMs: 30_000 };
  const delays = [1, 2, 3, 4, 5, 6, 7, 100].map((n) => backoffDelay(policy, n));
  assert.deepEqual(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
  assert.equal(backoffDelay(policy, 10_000), 30_000, "no overflow");
});

Deno.test("backoff: jitter stays within ±fraction and under the cap", () => {
  assert.equal(withJitter(1000, 0.2, Infinity, () => 0), 800);
  assert.equal(withJitter(1000, 0.2, Infinity, () => 1), 1200);
  assert.equal(withJitter(1000, 0.2, Infinity, () => 0.5), 1000);
  assert.equal(withJitter(30_000, 0.2, 30_000, () => 1), 30_000);
  assert.equal(withJitter(1000, 0, 500), 500);
});

Deno.test("backoff: the watcher policy starts near 0.8 s and reaches 30 s", () => {
  const b = new Backoff(WATCH_BACKOFF, () => 0.5);
  const seen = Array.from({ length: 8 }, () => b.next());
  assert.equal(seen[0], 800);
  assert.equal(seen.at(-1), 30_000);
  assert.equal(b.attempts, 8);
  b.reset();
  assert.equal(b.next(), 800);
  const jittered = new Backoff(WATCH_BACKOFF);
  for (let i = 0; i < 50; i++) {
    const d = jittered.next();
    assert.ok(d >= 0 && d <= 30_000);
  }
});

Deno.test("clock: sleep resolves on fake time or early on abort", async () => {
  const clock = new FakeClock();
  let done = false;
  const s = sleep(clock, 100).then(() => done = true);
  await clock.advance(99);
  assert.equal(done, false);
  await clock.advance(1);
  await s;
  assert.equal(done, true);

  const ac = new AbortController();
  const aborted = sleep(clock, 1_000_000, ac.signal);
  ac.abort();
  await aborted;
  assert.equal(clock.pendingTimers, 0);
});
