import assert from "node:assert/strict";
import { FakeClock } from "../../runtime/core/clock.ts";
import { Deadlines } from "../../runtime/core/deadlines.ts";

Deno.test("deadlines: each expires at its own time, on one timer", async () => {
  const clock = new FakeClock();
  const deadlines = new Deadlines(clock);
  const fired: string[] = [];
  deadlines.start(100, () => fired.push("a"));
  clock.setTimeout(() => {}, 0); // a timer of someone else's, to count ours apart
  await clock.advance(0);
  deadlines.start(300, () => fired.push("b"));
  deadlines.start(50, () => fired.push("c"));
  assert.equal(clock.pendingTimers, 1, "one timer for three deadlines");
  await clock.advance(60);
  assert.deepEqual(fired, ["c"]);
  await clock.advance(50);
  assert.deepEqual(fired, ["c", "a"]);
  await clock.advance(200);
  assert.deepEqual(fired, ["c", "a", "b"]);
  assert.equal(deadlines.size, 0);
  assert.equal(clock.pendingTimers, 0, "no timer left once every deadline is past");
});

Deno.test("deadlines: extended from when data arrived, never expired once cancelled", async () => {
  const clock = new FakeClock();
  const deadlines = new Deadlines(clock);
  const fired: string[] = [];
  const slow = deadlines.start(100, () => fired.push("slow"));
  const done = deadlines.start(100, () => fired.push("done"));
  await clock.advance(80);
  slow.extend();
  done.cancel();
  await clock.advance(80);
  assert.deepEqual(fired, [], "extended at 80: due at 180");
  await clock.advance(30);
  assert.deepEqual(fired, ["slow"]);
  slow.extend();
  slow.cancel();
  await clock.advance(500);
  assert.deepEqual(fired, ["slow"], "each expires once");
});

Deno.test("deadlines: the last cancel clears the timer, so nothing keeps the process alive", () => {
  const clock = new FakeClock();
  const deadlines = new Deadlines(clock);
  const a = deadlines.start(30_000, () => {});
  const b = deadlines.start(30_000, () => {});
  a.cancel();
  assert.equal(clock.pendingTimers, 1);
  b.cancel();
  assert.equal(clock.pendingTimers, 0);
});
