import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { FakeClock } from "../../runtime/core/clock.ts";
import {
  Action,
  Controller,
  mapByControllerOwner,
  mapByLabel,
  type ReconcileResult,
  TerminalError,
} from "../../runtime/controller/controller.ts";
import { Cache } from "../../runtime/cache/store.ts";

function cm(name: string, rv = "1", meta: Partial<ConfigMap["metadata"]> = {}): ConfigMap {
  return { metadata: { namespace: "ns", name, resourceVersion: rv, ...meta } };
}

/** Lets the workers run what is due. */
const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("mappers: by controller ownerReference of the primary's kind and group", () => {
  const map = mapByControllerOwner("MiniCluster", "flux-framework.org");
  const owned = (apiVersion: string, kind: string, controller = true) =>
    cm("child", "1", {
      ownerReferences: [{ apiVersion, kind, name: "mc", uid: "u", controller }],
    });
  assert.deepEqual(map(owned("flux-framework.org/v1alpha2", "MiniCluster")), ["ns/mc"]);
  assert.deepEqual(map(owned("flux-framework.org/v1alpha2", "MiniCluster", false)), []);
  assert.deepEqual(map(owned("other.org/v1", "MiniCluster")), []);
  assert.deepEqual(map(owned("batch/v1", "Job")), []);
  assert.deepEqual(mapByControllerOwner("Job", "batch")(owned("batch/v1", "Job")), ["ns/mc"]);
  assert.deepEqual(mapByControllerOwner("ConfigMap", "")(owned("v1", "ConfigMap")), ["ns/mc"]);
  assert.deepEqual(map(cm("orphan")), []);
});

Deno.test("mappers: by a label naming the primary", () => {
  const map = mapByLabel("flux-framework.org/minicluster");
  assert.deepEqual(
    map(cm("pod-0", "1", { labels: { "flux-framework.org/minicluster": "mc" } })),
    ["ns/mc"],
  );
  assert.deepEqual(map(cm("pod-0")), []);
});

Deno.test("controller: workers wait for every store, then reconcile each primary", async () => {
  const primary = new Cache<ConfigMap>("configmaps");
  const children = new Cache<ConfigMap>("children");
  const seen: string[] = [];
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    secondaries: [{ store: children, mapper: mapByLabel("parent") }],
    reconciler: {
      reconcile(obj) {
        seen.push(obj.metadata!.name!);
        return Promise.resolve(Action.awaitChange());
      },
    },
    clock: new FakeClock(),
  });
  const started = c.start();
  primary.replace([cm("a"), cm("b")], { synced: true });
  await tick();
  assert.deepEqual(seen, [], "the secondary store is not synced yet");
  children.replace([cm("a-child", "1", { labels: { parent: "a" } })], { synced: true });
  await started;
  await tick();
  assert.deepEqual(seen.sort(), ["a", "b"]);

  seen.length = 0;
  children.apply("MODIFIED", cm("a-child", "2", { labels: { parent: "a" } }));
  primary.apply("MODIFIED", cm("b", "2"));
  await tick();
  assert.deepEqual(seen.sort(), ["a", "b"]);
  await c.stop();
});

Deno.test("controller: errors retry with backoff, terminal errors do not, successes forget", async () => {
  const clock = new FakeClock();
  const primary = new Cache<ConfigMap>("configmaps");
  const results: ReconcileResult[] = [];
  let failuresLeft = 3;
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    reconciler: {
      reconcile(obj) {
        if (obj.metadata!.name === "terminal") throw new TerminalError("bad spec");
        if (failuresLeft-- > 0) throw new Error("transient");
        return Promise.resolve(Action.awaitChange());
      },
    },
    clock,
    metrics: { reconciled: (_c, r) => results.push(r) },
  });
  primary.replace([cm("flaky")], { synced: true });
  await c.start();
  await tick();
  assert.deepEqual(results, ["error"]);
  await clock.advance(5);
  assert.deepEqual(results, ["error", "error"]);
  await clock.advance(9);
  assert.deepEqual(results, ["error", "error"], "second retry waits 10 ms");
  await clock.advance(1);
  await clock.advance(20);
  assert.deepEqual(results, ["error", "error", "error", "success"]);
  assert.equal(c.queue.numRequeues("ns/flaky"), 0, "forgotten after success");

  results.length = 0;
  primary.apply("ADDED", cm("terminal"));
  await tick();
  await clock.advance(10_000);
  assert.deepEqual(results, ["terminal"]);
  assert.equal(clock.pendingTimers, 1, "only the resync timer remains");
  await c.stop();
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("controller: requeueAfter reconciles again after the delay", async () => {
  const clock = new FakeClock();
  const primary = new Cache<ConfigMap>("configmaps");
  let runs = 0;
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    reconciler: {
      reconcile() {
        runs++;
        return Promise.resolve(runs < 3 ? Action.requeueAfter(1000) : Action.awaitChange());
      },
    },
    clock,
    resyncPeriodMs: 0,
  });
  primary.replace([cm("a")], { synced: true });
  await c.start();
  await tick();
  assert.equal(runs, 1);
  await clock.advance(999);
  assert.equal(runs, 1);
  await clock.advance(1);
  assert.equal(runs, 2);
  await clock.advance(1000);
  assert.equal(runs, 3);
  await clock.advance(100_000);
  assert.equal(runs, 3);
  await c.stop();
});

Deno.test("controller: one key never runs twice at once; stop waits for the reconcile", async () => {
  const primary = new Cache<ConfigMap>("configmaps");
  let running = 0;
  let maxRunning = 0;
  let runs = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    concurrency: 4,
    reconciler: {
      async reconcile() {
        running++;
        runs++;
        maxRunning = Math.max(maxRunning, running);
        await gate;
        running--;
        return Action.awaitChange();
      },
    },
    clock: new FakeClock(),
  });
  primary.replace([cm("a")], { synced: true });
  await c.start();
  await tick();
  for (let rv = 2; rv < 6; rv++) primary.apply("MODIFIED", cm("a", String(rv)));
  await tick();
  assert.equal(maxRunning, 1);
  release();
  await tick();
  assert.equal(runs, 2, "the changes while running coalesce into one more run");
  let stopped = false;
  const stopping = c.stop().then(() => stopped = true);
  await stopping;
  assert.equal(stopped, true);
  assert.equal(maxRunning, 1);
});

Deno.test("controller: a reconciler that throws non-Errors or rejects never escapes", async () => {
  const clock = new FakeClock();
  const primary = new Cache<ConfigMap>("configmaps");
  let runs = 0;
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    reconciler: {
      reconcile() {
        runs++;
        // deno-lint-ignore no-throw-literal
        throw "a string";
      },
    },
    clock,
  });
  primary.replace([cm("a")], { synced: true });
  await c.start();
  await tick();
  await clock.advance(5);
  assert.equal(runs, 2);
  await c.stop();
});

Deno.test("controller: periodic resync re-enqueues every primary", async () => {
  const clock = new FakeClock();
  const primary = new Cache<ConfigMap>("configmaps");
  let runs = 0;
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    reconciler: { reconcile: () => Promise.resolve((runs++, Action.awaitChange())) },
    clock,
    resyncPeriodMs: 10_000,
  });
  primary.replace([cm("a"), cm("b")], { synced: true });
  await c.start();
  await tick();
  assert.equal(runs, 2);
  await clock.advance(11_001); // period + the most jitter (10 %)
  assert.equal(runs, 4);
  await c.stop();
});

Deno.test("controller: a deleted primary calls the optional deleted hook", async () => {
  const primary = new Cache<ConfigMap>("configmaps");
  const deleted: string[] = [];
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    reconciler: {
      reconcile: () => Promise.resolve(Action.awaitChange()),
      deleted: (key) => Promise.resolve(void deleted.push(key)),
    },
    clock: new FakeClock(),
  });
  primary.replace([cm("a")], { synced: true });
  await c.start();
  await tick();
  primary.apply("DELETED", cm("a"));
  await tick();
  assert.deepEqual(deleted, ["ns/a"]);
  await c.stop();
});

/**
 * A started controller of the primary "a" whose pods (a secondary by the label `parent`) are
 * batched for a second, `atOnce` as given; the reconciles counted by `runs()`.
 */
async function batchingController(atOnce?: (obj: ConfigMap) => boolean) {
  const clock = new FakeClock();
  const primary = new Cache<ConfigMap>("configmaps");
  const pods = new Cache<ConfigMap>("pods");
  let runs = 0;
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    secondaries: [{ store: pods, mapper: mapByLabel("parent"), delayMs: 1000, atOnce }],
    reconciler: {
      reconcile() {
        runs++;
        return Promise.resolve(Action.awaitChange());
      },
    },
    clock,
    resyncPeriodMs: 0,
  });
  primary.replace([cm("a")], { synced: true });
  pods.replace([], { synced: true });
  await c.start();
  await tick();
  assert.equal(runs, 1);
  return { clock, primary, pods, c, runs: () => runs };
}

Deno.test("controller: a secondary's delay batches its events; the primary's own come at once", async () => {
  const { clock, primary, pods, c, runs } = await batchingController();
  // Four pods change within the window: one reconcile, a second after the first event.
  for (let i = 0; i < 4; i++) {
    pods.apply("ADDED", cm(`a-${i}`, "1", { labels: { parent: "a" } }));
    await clock.advance(200);
  }
  assert.equal(runs(), 1);
  await clock.advance(200);
  assert.equal(runs(), 2);
  await clock.advance(10_000);
  assert.equal(runs(), 2);
  // A pending delayed key is run at once by a change of the primary itself.
  pods.apply("MODIFIED", cm("a-0", "2", { labels: { parent: "a" } }));
  primary.apply("MODIFIED", cm("a", "2"));
  await tick();
  assert.equal(runs(), 3);
  await clock.advance(10_000);
  assert.equal(runs(), 3);
  await c.stop();
});

Deno.test("controller: a secondary's event its atOnce accepts skips the batch", async () => {
  const { clock, pods, c, runs } = await batchingController((obj) =>
    obj.metadata?.labels?.last === "true"
  );
  pods.apply("ADDED", cm("a-0", "1", { labels: { parent: "a" } }));
  await clock.advance(100);
  assert.equal(runs(), 1, "batched");
  // A last state before a delete: at once, taking the batched run with it.
  pods.apply("MODIFIED", cm("a-0", "2", { labels: { parent: "a", last: "true" } }));
  await tick();
  assert.equal(runs(), 2);
  await clock.advance(10_000);
  assert.equal(runs(), 2);
  await c.stop();
});

Deno.test("controller: at start-up, a new primary goes before the thousands the first list loaded", async () => {
  const primary = new Cache<ConfigMap>("configmaps");
  const order: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    reconciler: {
      async reconcile(obj) {
        order.push(obj.metadata!.name!);
        await gate; // the worker is busy while the new MiniCluster arrives
        return Action.awaitChange();
      },
    },
    clock: new FakeClock(),
  });
  const started = c.start();
  const existing = Array.from({ length: 1000 }, (_, i) => cm(`old-${i}`));
  primary.replace(existing, { synced: true });
  await started;
  await tick();
  primary.apply("ADDED", cm("new"));
  release();
  while (order.length < 3) await tick();
  assert.equal(order[1], "new", `reconciled after ${order.indexOf("new")} others`);
  await c.stop();
});

Deno.test("controller: each reconcile logs with its key and a reconcile id, and says why it ran", async () => {
  const records: { msg: string; fields?: Record<string, unknown> }[] = [];
  const record = (msg: string, fields?: Record<string, unknown>) => records.push({ msg, fields });
  const log = { debug: record, info: record, warn: record, error: record };
  const primary = new Cache<ConfigMap>("configmaps");
  const children = new Cache<ConfigMap>("children");
  const ids: string[] = [];
  const c = new Controller<ConfigMap>({
    name: "t",
    primary,
    secondaries: [{ store: children, mapper: mapByLabel("parent") }],
    reconciler: {
      reconcile(_obj, ctx) {
        ids.push(ctx.reconcileID!);
        ctx.log.info("inside");
        return Promise.resolve(Action.awaitChange());
      },
    },
    clock: new FakeClock(),
    log,
  });
  const started = c.start();
  primary.replace([cm("a")], { synced: true });
  children.replace([], { synced: true });
  await started;
  await tick();
  children.apply("ADDED", cm("a-child", "1", { labels: { parent: "a" } }));
  primary.apply("MODIFIED", cm("a", "2"));
  await tick();
  await c.stop();
  const whys = records.filter((r) => r.msg === "reconciling").map((r) => r.fields?.why);
  // The child event handed the key to the worker at once; the update came while it held it.
  assert.deepEqual(whys, ["listed", "children added", "updated"]);
  const inside = records.filter((r) => r.msg === "inside");
  assert.deepEqual(inside.map((r) => r.fields?.reconcileID), ids);
  assert.ok(inside.every((r) => r.fields?.key === "ns/a"));
  assert.equal(new Set(ids).size, 3, "one id per reconcile");
});
