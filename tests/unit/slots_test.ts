import assert from "node:assert/strict";
import { Slots } from "../../runtime/pacing/slots.ts";

Deno.test("slots: at most `limit` in flight, the rest served in order", async () => {
  const slots = new Slots(2);
  const order: string[] = [];
  const a = await slots.acquire();
  const b = await slots.acquire();
  const c = slots.acquire().then((release) => (order.push("c"), release));
  const d = slots.acquire().then((release) => (order.push("d"), release));
  await Promise.resolve();
  assert.deepEqual([slots.inFlight, slots.waiting, order], [2, 2, []]);
  a();
  a(); // a second release of the same slot frees nothing more
  const releaseC = await c;
  assert.deepEqual([slots.inFlight, slots.waiting, order], [2, 1, ["c"]]);
  b();
  const releaseD = await d;
  assert.deepEqual(order, ["c", "d"]);
  releaseC();
  releaseD();
  assert.deepEqual([slots.inFlight, slots.waiting], [0, 0]);
});

Deno.test("slots: an abort while waiting leaves the queue", async () => {
  const slots = new Slots(1);
  const held = await slots.acquire();
  const abort = new AbortController();
  const waiting = slots.acquire(abort.signal);
  abort.abort(new Error("gone"));
  await assert.rejects(waiting, /gone/);
  assert.equal(slots.waiting, 0);
  held();
  assert.equal(slots.inFlight, 0);
});

Deno.test("slots: 0 means no bound", async () => {
  const slots = new Slots(0);
  const releases = await Promise.all([1, 2, 3, 4, 5].map(() => slots.acquire()));
  assert.equal(slots.inFlight, 5);
  for (const release of releases) release();
  assert.equal(slots.inFlight, 0);
});

Deno.test("slots: a higher limit lets waiters in at once; a lower one waits for the drain", async () => {
  const slots = new Slots(2);
  const a = await slots.acquire();
  const b = await slots.acquire();
  const order: string[] = [];
  const c = slots.acquire().then((r) => (order.push("c"), r));
  const d = slots.acquire().then((r) => (order.push("d"), r));
  slots.setLimit(3);
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(order, ["c"]);
  assert.equal(slots.inFlight, 3);
  slots.setLimit(1);
  a();
  b();
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(order, ["c"], "3 in flight over a bound of 1: d waits");
  (await c)();
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(order, ["c", "d"]);
  (await d)();
  assert.equal(slots.inFlight, 0);
});

Deno.test("slots: a free slot goes to the first non-empty lane; an abort leaves its own lane", async () => {
  const slots = new Slots(1);
  const held = await slots.acquire();
  const order: string[] = [];
  const queue = (name: string, lane: number, signal?: AbortSignal) =>
    slots.acquire(signal, lane).then((release) => {
      order.push(name);
      release();
    });
  const abort = new AbortController();
  const late = [queue("late-1", 2), queue("mid", 1), queue("late-2", 2)];
  const aborted = queue("gone", 0, abort.signal);
  const first = queue("first", 0);
  assert.equal(slots.waiting, 5);
  abort.abort(new Error("gone"));
  await assert.rejects(aborted, /gone/);
  assert.equal(slots.waiting, 4);
  held();
  await Promise.all([...late, first]);
  assert.deepEqual(order, ["first", "mid", "late-1", "late-2"]);
  assert.deepEqual([slots.inFlight, slots.waiting], [0, 0]);
});
