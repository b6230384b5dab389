// The write pacing layer (runtime/pacing/write_pacing.ts): priorities at the write slots, each
// mechanism's own switch, the burst yield started and stopped, and what each one shows on /metrics.
import assert from "node:assert/strict";
import { FakeClock } from "../../runtime/core/clock.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { FreshnessFence, StaleViewError } from "../../runtime/controller/freshness_fence.ts";
import { Registry } from "../../runtime/metrics/metrics.ts";
import { OwnWrites } from "../../runtime/watch/own_writes.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import { RuntimeMetrics } from "../../runtime/metrics/runtime_metrics.ts";
import { Cache, type KubeObject } from "../../runtime/cache/store.ts";
import { WritePacing } from "../../runtime/pacing/write_pacing.ts";
import { type FenceResult, runtimeSwitches } from "../../runtime/pacing/pacing.ts";
import { FakeApiClient } from "../../testing/fake_api.ts";
import { parseMetrics, type Sample } from "../../testing/metrics_text.ts";

const flush = () => new Promise((r) => setTimeout(r, 0));

/** A layer reporting to a registry of its own, and the samples that registry renders. */
function withMetrics(opts: { maxWritesInFlight: number; clock?: FakeClock }) {
  const registry = new Registry();
  const metrics = new RuntimeMetrics(registry);
  const pacing = new WritePacing({ ...opts, metrics: metrics.pacing });
  const samples = () => parseMetrics(registry.render());
  return { pacing, samples };
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.find((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  assert.ok(found, `${name} ${JSON.stringify(labels)} is on /metrics`);
  return found.value;
}

const objects = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ metadata: { namespace: "ns", name: `${prefix}${i}` } }));

Deno.test("write pacing: a free slot goes to normal writes before low ones; critical ones never wait", async () => {
  const pacing = new WritePacing({ maxWritesInFlight: 1 });
  const held = await pacing.admit("normal");
  const order: string[] = [];
  const queue = (name: string, priority: "normal" | "low") =>
    pacing.admit(priority).then((release) => {
      order.push(name);
      release();
    });
  const waiting = [queue("low-1", "low"), queue("normal-1", "normal"), queue("low-2", "low")];
  waiting.push(queue("normal-2", "normal"));
  const critical = await pacing.admit("critical");
  assert.deepEqual(order, [], "a critical write went by the four waiting");
  assert.equal(pacing.slots.inFlight, 1, "and took no slot");
  critical();
  held();
  await Promise.all(waiting);
  assert.deepEqual(order, ["normal-1", "normal-2", "low-1", "low-2"]);
  assert.equal(pacing.slots.inFlight, 0);
});

Deno.test("write pacing: a status write waits behind the child writes sent after it (KubeClient)", async () => {
  const served: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    served.push(new URL(req.url).pathname.split("/").pop()!);
    await new Promise((r) => setTimeout(r, 20));
    return new Response("{}");
  });
  const port = (server.addr as Deno.NetAddr).port;
  const client = new KubeClient(
    { server: `http://127.0.0.1:${port}`, namespace: "default" },
    { maxWritesInFlight: 1 },
  );
  const cm = (name: string) => ({ metadata: { namespace: "ns", name } });
  try {
    const first = client.create(ConfigMaps, cm("first"));
    await new Promise((r) => setTimeout(r, 5));
    await Promise.all([
      first,
      client.apply(ConfigMaps, cm("report"), { fieldManager: "t", priority: "low" }),
      client.apply(ConfigMaps, cm("child"), { fieldManager: "t" }),
    ]);
    assert.deepEqual(served, ["configmaps", "child", "report"]);
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("write pacing: slot waits, wait time and the slots' state are on /metrics", async () => {
  const clock = new FakeClock();
  const { pacing, samples } = withMetrics({ maxWritesInFlight: 1, clock });
  const held = await pacing.admit("normal");
  const low = pacing.admit("low");
  await flush();
  let s = samples();
  assert.equal(value(s, "write_slots", { state: "limit" }), 1);
  assert.equal(value(s, "write_slots", { state: "in_flight" }), 1);
  assert.equal(value(s, "write_slots", { state: "waiting" }), 1);
  await clock.advance(300);
  held();
  (await low)();
  s = samples();
  assert.equal(value(s, "write_slot_waits_total", { priority: "low" }), 1);
  assert.equal(value(s, "write_slot_wait_seconds_count", { priority: "low" }), 1);
  assert.equal(value(s, "write_slot_wait_seconds_sum", { priority: "low" }), 0.3);
  assert.equal(value(s, "write_slot_wait_seconds_count", { priority: "normal" }), 1, "at once");
  assert.equal(value(s, "write_slot_wait_seconds_sum", { priority: "normal" }), 0);
  assert.ok(
    !s.some((x) => x.name === "write_slot_waits_total" && x.labels.priority === "normal"),
    "the normal write found a free slot",
  );
  assert.equal(value(s, "write_slots", { state: "waiting" }), 0);
});

Deno.test("write pacing: the burst yield follows its store only between start and stop, on /metrics", async () => {
  const clock = new FakeClock();
  const { pacing, samples } = withMetrics({ maxWritesInFlight: 8, clock });
  const store = new Cache<KubeObject>("widgets");
  pacing.yieldToBursts(store, { during: 1, burstPerSecond: 20 });
  for (const o of objects("before-", 30)) store.apply("ADDED", o);
  assert.ok(!pacing.yielding, "not followed before start");
  assert.equal(value(samples(), "write_burst_yielding"), 0);

  pacing.start();
  for (const o of objects("burst-", 30)) store.apply("ADDED", o);
  assert.ok(pacing.yielding);
  assert.equal(pacing.slots.limit, 1);
  let s = samples();
  assert.equal(value(s, "write_burst_yielding"), 1);
  assert.equal(value(s, "write_burst_yields_total"), 1);
  assert.equal(value(s, "write_slots", { state: "limit" }), 1);

  pacing.stop();
  assert.ok(!pacing.yielding, "stop ends the yield");
  assert.equal(pacing.slots.limit, 8, "the full bound again");
  for (const o of objects("after-", 30)) store.apply("ADDED", o);
  assert.ok(!pacing.yielding, "not followed after stop");
  s = samples();
  assert.equal(value(s, "write_burst_yielding"), 0);
  assert.equal(value(s, "write_burst_yields_total"), 1);
  await clock.advance(2_000);
  assert.equal(pacing.slots.limit, 8, "no timer of the yield left behind");
});

Deno.test("write pacing: the names --pacing-off gives make one switch per mechanism", () => {
  assert.deepEqual(runtimeSwitches([]), {
    writeSlots: true,
    burstYield: true,
    relistBudget: true,
    freshnessFence: true,
    ownWrites: true,
  });
  assert.deepEqual(runtimeSwitches(["relist-budget", "own-writes", "first-status-delay"]), {
    writeSlots: true,
    burstYield: true,
    relistBudget: false,
    freshnessFence: true,
    ownWrites: false,
  }, "a program's own name (first-status-delay) is not the runtime's");
});

Deno.test("write pacing: each mechanism switched off by its own switch, none through the client", async () => {
  const on = new WritePacing({ maxWritesInFlight: 8 });
  assert.ok(on.relistBudget, "a relist budget by default");
  assert.equal(on.slots.limit, 8);

  const off = new WritePacing({
    maxWritesInFlight: 8,
    writeSlots: false,
    burstYield: false,
    relistBudget: false,
  });
  assert.equal(off.slots.limit, 0, "write-slots: no bound");
  assert.equal(off.relistBudget, undefined, "relist-budget: none");

  const noYield = new WritePacing({ maxWritesInFlight: 8, burstYield: false });
  const store = new Cache<KubeObject>("widgets");
  noYield.yieldToBursts(store, { during: 1, burstPerSecond: 20 });
  noYield.start();
  for (const o of objects("burst-", 30)) store.apply("ADDED", o);
  assert.ok(!noYield.yielding, "burst-yield: the bound stays");
  assert.equal(noYield.slots.limit, 8);

  // A fence with its switch off reads nothing.
  const api = new FakeApiClient();
  const seen = { metadata: { namespace: "ns", name: "gone", uid: "u", generation: 1 } };
  await FreshnessFence.reading(api, ConfigMaps, seen, { on: false }).check();
  assert.deepEqual(api.requests, [], "freshness-fence: no read, the view is trusted");
  await assert.rejects(FreshnessFence.reading(api, ConfigMaps, seen).check(), StaleViewError);
  assert.equal(api.requests.length, 1, "on by default: the read");

  // The client contract carries no switch: not the client, not the client that records writes.
  assert.ok(!("pacing" in api), "the fake client has no pacing layer");
  assert.ok(!("pacing" in new OwnWrites().recording(api)), "nor the recording client");

  const zero = new WritePacing({ maxWritesInFlight: 0 });
  zero.yieldToBursts(store, { during: 1, burstPerSecond: 20 });
  zero.start();
  for (const o of objects("more-", 30)) store.apply("ADDED", o);
  assert.ok(!zero.yielding, "no bound to lower: no yield");
});

Deno.test("write pacing: fence reads by result, relist tokens and own-writes entries are on /metrics", async () => {
  const clock = new FakeClock();
  const { pacing, samples } = withMetrics({ maxWritesInFlight: 8, clock });
  const api = new FakeApiClient();
  const fence = { on: true, onRead: (result: FenceResult) => pacing.fenceRead(result) };
  const reading = (seen: KubeObject) => FreshnessFence.reading(api, ConfigMaps, seen, fence);
  const live = await api.create(ConfigMaps, { metadata: { namespace: "ns", name: "a" } });
  await reading(live).check();
  const older = { metadata: { ...live.metadata, generation: 0 } };
  await assert.rejects(reading(older).check(), StaleViewError);
  const gone = { metadata: { namespace: "ns", name: "b", uid: "x" } };
  await assert.rejects(reading(gone).check(), StaleViewError);
  api.react(() => new Error("connection reset"));
  await assert.rejects(reading(live).check(), /reset/);
  await FreshnessFence.live().check();
  let s = samples();
  assert.equal(value(s, "freshness_fence_reads_total", { result: "fresh" }), 1);
  assert.equal(value(s, "freshness_fence_reads_total", { result: "stale" }), 2);
  assert.equal(value(s, "freshness_fence_reads_total", { result: "error" }), 1);

  pacing.relistBudget!.addStreams(2);
  assert.equal(value(samples(), "watch_relist_tokens"), 2);
  assert.equal(pacing.relistBudget!.take(), 0);
  assert.equal(pacing.relistBudget!.take(), 0);
  assert.ok(pacing.relistBudget!.take() > 0, "the third relist waits");
  s = samples();
  assert.equal(value(s, "watch_relist_tokens"), 0);
  assert.equal(value(s, "watch_relist_budget_waits_total"), 1);

  const writes = new OwnWrites({ clock });
  pacing.trackOwnWrites(writes);
  const cache = new Cache<KubeObject>("configmaps");
  writes.over(cache);
  const recording = writes.recording(new FakeApiClient());
  await recording.create(ConfigMaps, { metadata: { namespace: "ns", name: "c1" } });
  await recording.create(ConfigMaps, { metadata: { namespace: "ns", name: "c2" } });
  assert.equal(value(samples(), "own_writes_entries"), 2);
});
