import assert from "node:assert/strict";
import { BurstYield } from "../../runtime/pacing/burst_yield.ts";
import { FakeClock } from "../../runtime/core/clock.ts";
import { Slots } from "../../runtime/pacing/slots.ts";
import { Cache, type KubeObject } from "../../runtime/cache/store.ts";

const flush = () => new Promise((r) => setTimeout(r, 0));

Deno.test("burst yield: a burst of arrivals lowers the bound; a quiet second restores it", async () => {
  const clock = new FakeClock();
  const slots = new Slots(8);
  const burst = new BurstYield(slots, { during: 1, burstPerSecond: 20, clock });
  // 19 in a second is no burst.
  for (let i = 0; i < 19; i++) {
    burst.arrived();
    await clock.advance(50);
  }
  assert.equal(slots.limit, 8);
  assert.ok(!burst.yielding);
  // 20 within one second is.
  for (let i = 0; i < 20; i++) {
    burst.arrived();
    await clock.advance(10);
  }
  assert.equal(slots.limit, 1);
  assert.ok(burst.yielding);
  // Arrivals go on: the yield goes on.
  for (let i = 0; i < 40; i++) {
    burst.arrived();
    await clock.advance(40);
  }
  assert.equal(slots.limit, 1);
  // A quiet second after the last arrival (checked a window after it): the full bound again.
  await clock.advance(1_100);
  assert.equal(slots.limit, 8);
  assert.ok(!burst.yielding);
});

Deno.test("burst yield: writes in flight finish; the next ones wait for the lower bound", async () => {
  const clock = new FakeClock();
  const slots = new Slots(4);
  const burst = new BurstYield(slots, { during: 1, burstPerSecond: 2, clock });
  const held = await Promise.all([slots.acquire(), slots.acquire(), slots.acquire()]);
  burst.arrived();
  burst.arrived();
  let granted = false;
  const next = slots.acquire().then((release) => {
    granted = true;
    return release;
  });
  held[0]();
  held[1]();
  await flush();
  assert.ok(!granted, "2 writes still in flight, bound 1: it waits");
  held[2]();
  await flush();
  assert.ok(granted, "none in flight: one goes");
  let second = false;
  const after = slots.acquire().then((release) => {
    second = true;
    return release;
  });
  await flush();
  assert.ok(!second, "bound 1 while the burst lasts");
  burst.stop();
  await flush();
  assert.ok(second, "the full bound again");
  (await next)();
  (await after)();
});

Deno.test("burst yield: follows a store's new objects, not its initial list", () => {
  const clock = new FakeClock();
  const slots = new Slots(8);
  const burst = new BurstYield(slots, { during: 1, burstPerSecond: 20, clock });
  const store = new Cache<KubeObject>("miniclusters");
  const unsubscribe = burst.follow(store);
  const objects = (prefix: string) =>
    Array.from(
      { length: 30 },
      (_, i) => ({ metadata: { namespace: "ns", name: `${prefix}${i}` } }),
    );
  store.replace(objects("listed-"), { synced: true });
  assert.ok(!burst.yielding, "30 in the initial list are no burst");
  for (const o of objects("new-")) store.apply("ADDED", o);
  assert.ok(burst.yielding, "30 new ones within a second are");
  burst.stop();
  unsubscribe();
  for (const o of objects("later-")) store.apply("ADDED", o);
  assert.ok(!burst.yielding, "nothing is followed after the unsubscribe");
});

Deno.test("burst yield: tells when a yield begins and ends, once each", async () => {
  const clock = new FakeClock();
  const changes: boolean[] = [];
  const burst = new BurstYield(new Slots(8), {
    during: 1,
    burstPerSecond: 3,
    clock,
    onChange: (on) => changes.push(on),
  });
  for (let i = 0; i < 6; i++) burst.arrived();
  await clock.advance(2_100);
  assert.deepEqual(changes, [true, false]);
  burst.stop();
  assert.deepEqual(changes, [true, false], "stopping no yield tells nothing");
});
