import assert from "node:assert/strict";
import { FakeClock, systemClock } from "../../runtime/core/clock.ts";

const DAY_MS = 24 * 3600 * 1000;
/** The longest delay a timer takes (a signed 32-bit millisecond count); longer ones overflow. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

Deno.test("clock: the system clock holds a delay beyond the timer range instead of firing at once", async () => {
  let fired = 0;
  const id = systemClock.setTimeout(() => fired++, 30 * DAY_MS);
  // An overflowing delay fires after about 1 ms; 100 ms is far beyond that even under load.
  await new Promise((r) => setTimeout(r, 100));
  systemClock.clearTimeout(id);
  assert.equal(fired, 0, "a 30-day timer fired within 100 ms");
});

Deno.test("clock: the system clock takes a delay that is no number as 0, not as a loop of its own", async () => {
  let fired = 0;
  systemClock.setTimeout(() => fired++, Number.NaN);
  systemClock.setTimeout(() => fired++, -5);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(fired, 2);
});

Deno.test("clock: the fake clock fires a delay beyond the timer range at the longest one, as the system clock does", async () => {
  const clock = new FakeClock();
  let fired = 0;
  clock.setTimeout(() => fired++, 30 * DAY_MS);
  await clock.advance(1);
  assert.equal(fired, 0, "not at once");
  await clock.advance(LONGEST_TIMER_MS - 2);
  assert.equal(fired, 0);
  await clock.advance(1);
  assert.equal(fired, 1, "at the longest delay a timer takes: its owner decides again then");
  assert.equal(clock.pendingTimers, 0);
});
