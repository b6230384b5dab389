import assert from "node:assert/strict";
import { FakeClock } from "../../runtime/core/clock.ts";
import { WorkQueue } from "../../runtime/controller/workqueue.ts";

/** Whether `p` has settled after pending continuations ran. */
async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  p.then(() => settled = true, () => settled = true);
  await new Promise((r) => setTimeout(r, 0));
  return settled;
}

Deno.test("workqueue: pending keys are deduplicated and handed out in order", async () => {
  const q = new WorkQueue({ clock: new FakeClock() });
  q.add("ns/a");
  q.add("ns/b");
  q.add("ns/a");
  assert.equal(q.len, 2);
  assert.equal(await q.get(), "ns/a");
  assert.equal(await q.get(), "ns/b");
  assert.equal(q.len, 0);
  q.done("ns/a");
  q.done("ns/b");
  await q.shutDown();
});

Deno.test("workqueue: a key re-added while held runs again only after done", async () => {
  const q = new WorkQueue({ clock: new FakeClock() });
  q.add("k");
  assert.equal(await q.get(), "k");
  q.add("k");
  q.add("k");
  // Held by a worker: a second worker must not get it.
  const second = q.get();
  assert.equal(await isSettled(second), false);
  q.done("k");
  assert.equal(await second, "k");
  q.done("k");
  assert.equal(q.len, 0);
  await q.shutDown();
});

Deno.test("workqueue: N workers take distinct keys concurrently", async () => {
  const q = new WorkQueue({ clock: new FakeClock() });
  // Three idle workers, then three keys: each worker wakes with a different key.
  const workers = [q.get(), q.get(), q.get()];
  q.add("a");
  q.add("b");
  q.add("c");
  const got = await Promise.all(workers);
  assert.deepEqual(got.sort(), ["a", "b", "c"]);
  assert.equal(q.inFlight, 3);
  for (const k of ["a", "b", "c"]) q.done(k);
  await q.shutDown();
});

Deno.test("workqueue: addRateLimited backs off 5 ms doubling to the cap; forget resets", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock, backoff: { initialMs: 5, maxMs: 40 } });
  // Each retry becomes due exactly at its backoff delay, not a millisecond earlier.
  for (const expected of [5, 10, 20, 40, 40, 40]) {
    q.addRateLimited("k");
    const next = q.get();
    await clock.advance(expected - 1);
    assert.equal(await isSettled(next), false, `not due before ${expected} ms`);
    await clock.advance(1);
    assert.equal(await next, "k");
    q.done("k");
  }
  assert.equal(q.numRequeues("k"), 6);
  q.forget("k");
  assert.equal(q.numRequeues("k"), 0);
  assert.equal(q.nextBackoff("k"), 5);
  await q.shutDown();
});

Deno.test("workqueue: backoff is per key", () => {
  const q = new WorkQueue({ clock: new FakeClock() });
  q.addRateLimited("a");
  q.addRateLimited("a");
  q.addRateLimited("b");
  assert.equal(q.nextBackoff("a"), 20);
  assert.equal(q.nextBackoff("b"), 10);
  return q.shutDown();
});

Deno.test("workqueue: addAfter keeps the earliest deadline", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.addAfter("k", 100);
  q.addAfter("k", 50); // earlier: wins
  q.addAfter("k", 500); // later: ignored
  assert.equal(q.delayed, 1);
  await clock.advance(49);
  assert.equal(q.len, 0);
  await clock.advance(1);
  assert.equal(q.len, 1);
  assert.equal(await q.get(), "k");
  q.done("k");
  // Nothing else fires later: the 100 and 500 ms deadlines were dropped.
  await clock.advance(1000);
  assert.equal(q.len, 0);
  assert.equal(clock.pendingTimers, 0);
  await q.shutDown();
});

Deno.test("workqueue: an immediate add supersedes a pending delay", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.addAfter("k", 100);
  q.add("k");
  assert.equal(q.delayed, 0);
  assert.equal(await q.get(), "k");
  q.done("k");
  await clock.advance(200);
  assert.equal(q.len, 0);
  await q.shutDown();
});

Deno.test("workqueue: addAfter on a key already due now is a no-op", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.add("k");
  q.addAfter("k", 100);
  assert.equal(q.delayed, 0);
  assert.equal(q.len, 1);
  await q.shutDown();
});

Deno.test("workqueue: a delay firing while the key is held parks it until done", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.add("k");
  assert.equal(await q.get(), "k");
  q.addAfter("k", 10);
  await clock.advance(10);
  assert.equal(q.len, 0);
  q.done("k");
  assert.equal(q.len, 1);
  assert.equal(await q.get(), "k");
  q.done("k");
  await q.shutDown();
});

Deno.test("workqueue: shutDown stops intake, wakes idle workers and waits for in-flight keys", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.add("busy");
  assert.equal(await q.get(), "busy");
  const idle = q.get();
  q.add("pending-after-busy");
  // "pending-after-busy" went to the idle worker; take a third key that stays pending.
  assert.equal(await idle, "pending-after-busy");
  q.done("pending-after-busy");
  q.add("queued");
  q.addAfter("delayed", 100);
  const idle2 = q.get();
  assert.equal(await idle2, "queued");
  q.done("queued");
  const idle3 = q.get();

  const drained = q.shutDown();
  assert.equal(await idle3, undefined, "idle workers are released");
  assert.equal(await q.get(), undefined, "no key is handed out after shutdown");
  q.add("late");
  assert.equal(q.len, 0, "intake stopped");
  assert.equal(clock.pendingTimers, 0, "delayed keys dropped");
  assert.equal(await isSettled(drained), false, "waits for the in-flight key");
  q.done("busy");
  await drained;
});

Deno.test("workqueue: metrics hooks see adds, retries, depth and latency", async () => {
  const clock = new FakeClock();
  const seen = {
    added: 0,
    retried: 0,
    depth: [] as number[],
    queued: [] as number[],
    worked: [] as number[],
  };
  const q = new WorkQueue({
    clock,
    metrics: {
      added: () => seen.added++,
      retried: () => seen.retried++,
      depth: (n) => seen.depth.push(n),
      queued: (s) => seen.queued.push(s),
      worked: (s) => seen.worked.push(s),
    },
  });
  q.add("a");
  q.add("a");
  await clock.advance(2000);
  assert.equal(await q.get(), "a");
  await clock.advance(500);
  q.done("a");
  q.addRateLimited("a");
  assert.equal(seen.added, 1, "a key already pending is not added again (client-go's adds_total)");
  assert.equal(seen.retried, 1);
  assert.deepEqual(seen.queued, [2]);
  assert.deepEqual(seen.worked, [0.5]);
  assert.deepEqual(seen.depth, [1, 0]);
  await q.shutDown();
});

Deno.test("workqueue: unfinished work sums and bounds the time keys are held", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  assert.deepEqual(q.unfinishedWork(), { totalSeconds: 0, longestSeconds: 0 });
  q.add("a");
  q.add("b");
  assert.equal(await q.get(), "a");
  await clock.advance(3000);
  assert.equal(await q.get(), "b");
  await clock.advance(1000);
  assert.deepEqual(q.unfinishedWork(), { totalSeconds: 5, longestSeconds: 4 });
  q.done("a");
  assert.deepEqual(q.unfinishedWork(), { totalSeconds: 1, longestSeconds: 1 });
  q.done("b");
  await q.shutDown();
});

Deno.test("workqueue: urgent keys go first, in their own order; pending keys move up", async () => {
  const q = new WorkQueue({ clock: new FakeClock() });
  q.add("status/a");
  q.add("status/b");
  q.add("new/x", { urgent: true });
  q.add("status/c");
  q.add("status/b", { urgent: true }); // pending: moves up, behind x
  q.add("new/y", { urgent: true });
  q.add("new/x"); // a plain add never moves a key back
  assert.equal(q.len, 5);
  const order = [];
  for (let i = 0; i < 5; i++) order.push(await q.get());
  assert.deepEqual(order, ["new/x", "status/b", "new/y", "status/a", "status/c"]);
  for (const k of order) q.done(k!);
  await q.shutDown();
});

Deno.test("workqueue: an urgent add while a key is held or delayed keeps it urgent", async () => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.add("held");
  assert.equal(await q.get(), "held");
  q.add("held", { urgent: true }); // parked until done
  q.addAfter("later", 1000);
  q.add("later", { urgent: true }); // supersedes the delay
  q.add("plain");
  q.done("held");
  assert.deepEqual([await q.get(), await q.get(), await q.get()], ["later", "held", "plain"]);
  // Handed out: the next plain add of the same key is plain again.
  q.done("held");
  q.add("other");
  q.add("held");
  assert.deepEqual([await q.get(), await q.get()], ["other", "held"]);
  for (const k of ["later", "plain", "other", "held"]) q.done(k);
  await q.shutDown();
});
