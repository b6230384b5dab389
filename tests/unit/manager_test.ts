import assert from "node:assert/strict";
import { Action } from "../../runtime/controller/controller.ts";
import { Manager } from "../../runtime/manager.ts";
import { parseOptions } from "../../controllers/minicluster/operator_flags.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import { Cache, type KubeObject } from "../../runtime/cache/store.ts";
import { tokenKubeconfig } from "./token_kubeconfig.ts";

/** A manager connected to an address nothing listens on (nothing here sends a request). */
async function offlineManager(flags: string[] = []): Promise<Manager> {
  const kubeconfig = await tokenKubeconfig("https://127.0.0.1:1");
  const manager = new Manager(parseOptions([`--kubeconfig=${kubeconfig.path}`, ...flags], {}));
  await manager.connect();
  await kubeconfig.remove();
  return manager;
}

Deno.test("manager: one store per kind and selector, and only with one transform", async () => {
  const manager = await offlineManager();
  try {
    const slim = (o: KubeObject) => ({ metadata: o.metadata });
    const a = manager.watch(ConfigMaps, { labelSelector: "x=y", transform: slim });
    assert.equal(manager.watch(ConfigMaps, { labelSelector: "x=y", transform: slim }), a);
    assert.throws(
      () => manager.watch(ConfigMaps, { labelSelector: "x=y" }),
      /already watched with another transform/,
    );
    assert.throws(
      () => manager.watch(ConfigMaps, { labelSelector: "x=y", transform: (o) => o }),
      /already watched with another transform/,
    );
    assert.notEqual(manager.watch(ConfigMaps, { labelSelector: "x=z" }), a, "other selector");
  } finally {
    manager.client.close();
  }
});

Deno.test("manager: a store's extra indexes are fixed by its first watch, by name and function", async () => {
  const manager = await offlineManager();
  try {
    const byName = (o: KubeObject) => [o.metadata?.name ?? ""];
    const store = manager.watch(ConfigMaps, { indexes: { name: byName } });
    assert.equal(manager.watch(ConfigMaps, { indexes: { name: byName } }), store);
    assert.throws(() => manager.watch(ConfigMaps), /already watched with other indexes/);
    assert.throws(
      () => manager.watch(ConfigMaps, { indexes: { name: (o) => [o.metadata?.uid ?? ""] } }),
      /already watched with other indexes/,
      "same name, another function",
    );
    assert.throws(
      () => manager.watch(ConfigMaps, { indexes: { name: byName, other: byName } }),
      /already watched with other indexes/,
    );
  } finally {
    manager.client.close();
  }
});

Deno.test("manager: stuck work shows in the metrics (unfinished seconds, longest, active workers)", async () => {
  const manager = await offlineManager();
  try {
    const primary = manager.watch(ConfigMaps);
    manager.addController({
      name: "stuck",
      primary,
      reconciler: { reconcile: () => Promise.resolve(Action.awaitChange()) },
    });
    const text = manager.registry.render();
    assert.match(text, /^workqueue_unfinished_work_seconds\{name="stuck"\} 0$/m);
    assert.match(text, /^workqueue_longest_running_processor_seconds\{name="stuck"\} 0$/m);
    assert.match(text, /^controller_active_workers\{controller="stuck"\} 0$/m);
  } finally {
    manager.client.close();
  }
});

Deno.test("manager: the burst yield follows the bursts while it runs, and stops with it", async () => {
  const manager = await offlineManager(["--health-port=0", "--bind-address=127.0.0.1"]);
  const arrivals = new Cache<KubeObject>("widgets");
  const arrive = (prefix: string) => {
    for (let i = 0; i < 30; i++) arrivals.apply("ADDED", { metadata: { name: `${prefix}${i}` } });
  };
  manager.pacing.yieldToBursts(arrivals, { during: 1, burstPerSecond: 20 });
  arrive("before-");
  assert.ok(!manager.pacing.yielding, "not followed before the manager runs");
  const stop = new AbortController();
  const running = manager.run(stop.signal);
  while (!manager.synced) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 5));
  arrive("burst-");
  assert.ok(manager.pacing.yielding, "followed while it runs");
  assert.equal(manager.client.writeSlots.limit, 1);
  assert.match(manager.registry.render(), /^write_burst_yielding 1$/m);
  stop.abort();
  assert.equal(await running, 0);
  assert.ok(!manager.pacing.yielding, "the yield ended with the manager");
  assert.equal(manager.client.writeSlots.limit, 8, "the full bound again");
  arrive("after-");
  assert.ok(!manager.pacing.yielding, "and is followed no more");
});

Deno.test("manager: --pacing-off reaches each mechanism as its own switch", async () => {
  const manager = await offlineManager([
    "--pacing-off=write-slots,relist-budget,freshness-fence",
  ]);
  try {
    assert.equal(manager.client.pacing, manager.pacing);
    assert.equal(manager.client.writeSlots.limit, 0, "no bound on writes");
    assert.equal(manager.pacing.relistBudget, undefined);
    const { freshnessFence, ownWrites } = manager.controllerPacing;
    assert.equal(freshnessFence.on, false, "the fence's switch, for the controllers");
    assert.equal(ownWrites.on, true, "own writes not named: on");
    freshnessFence.onRead?.("stale");
    ownWrites.track?.({ entries: 3 });
    const text = manager.registry.render();
    assert.match(text, /^freshness_fence_reads_total\{result="stale"\} 1$/m, "reports on /metrics");
    assert.match(text, /^own_writes_entries 3$/m);
  } finally {
    manager.client.close();
  }
  const defaults = await offlineManager([]);
  try {
    assert.equal(defaults.client.writeSlots.limit, 8);
    assert.ok(defaults.pacing.relistBudget);
    assert.equal(defaults.controllerPacing.freshnessFence.on, true);
  } finally {
    defaults.client.close();
  }
});
