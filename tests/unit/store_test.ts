import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import {
  Cache,
  controllerOf,
  deepFreeze,
  type KubeObject,
  objectKey,
  splitKey,
  type StoreEvent,
} from "../../runtime/cache/store.ts";

function cm(
  namespace: string,
  name: string,
  rv: string,
  extra: { labels?: Record<string, string>; owner?: string } = {},
): ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      namespace,
      name,
      resourceVersion: rv,
      labels: extra.labels,
      ownerReferences: extra.owner
        ? [{ apiVersion: "v1", kind: "X", name: "o", uid: extra.owner, controller: true }]
        : undefined,
    },
  };
}

Deno.test("store: keys are namespace/name, or name when cluster-scoped", () => {
  assert.equal(objectKey(cm("ns", "a", "1")), "ns/a");
  assert.equal(objectKey({ metadata: { name: "node-1" } }), "node-1");
  assert.deepEqual(splitKey("ns/a"), { namespace: "ns", name: "a" });
  assert.deepEqual(splitKey("node-1"), { name: "node-1" });
});

Deno.test("store: ready resolves on the first complete list", async () => {
  const cache = new Cache<ConfigMap>("configmaps");
  assert.equal(cache.hasSynced, false);
  cache.replace([cm("a", "x", "1")], { synced: true });
  await cache.ready;
  assert.equal(cache.hasSynced, true);
  assert.equal(cache.get("a", "x")?.metadata?.resourceVersion, "1");
});

Deno.test("store: cached objects are frozen, so callers cannot change them", () => {
  const cache = new Cache<ConfigMap>("configmaps");
  cache.apply("ADDED", cm("a", "x", "1", { labels: { k: "v" } }));
  const obj = cache.get("a", "x")!;
  assert.throws(() => {
    (obj.metadata!.labels as Record<string, string>).k = "changed";
  }, TypeError);
  assert.ok(Object.isFrozen(deepFreeze({ a: [{ b: 1 }] }).a[0]));
});

Deno.test("store: watch events update contents, indexes and listeners", () => {
  const cache = new Cache<ConfigMap>("configmaps");
  const events: string[] = [];
  const off = cache.subscribe((e) => events.push(`${e.type} ${objectKey(e.object)}`));
  cache.apply("ADDED", cm("a", "x", "1", { owner: "uid-1" }));
  cache.apply("ADDED", cm("b", "y", "2", { owner: "uid-1" }));
  cache.apply("MODIFIED", cm("a", "x", "3", { owner: "uid-2" }));
  assert.deepEqual(cache.byIndex("owner", "uid-1").map(objectKey), ["b/y"]);
  assert.deepEqual(cache.byIndex("owner", "uid-2").map(objectKey), ["a/x"]);
  assert.deepEqual(cache.byIndex("namespace", "a").map(objectKey), ["a/x"]);
  cache.apply("DELETED", cm("b", "y", "4"));
  cache.apply("DELETED", cm("b", "never-seen", "5"));
  assert.deepEqual(cache.byIndex("owner", "uid-1"), []);
  assert.equal(cache.size, 1);
  off();
  cache.apply("ADDED", cm("c", "z", "6"));
  assert.deepEqual(events, ["added a/x", "added b/y", "updated a/x", "deleted b/y"]);
});

Deno.test("store: list filters by namespace and labels", () => {
  const cache = new Cache<ConfigMap>("configmaps");
  cache.apply("ADDED", cm("a", "1", "1", { labels: { app: "x", tier: "db" } }));
  cache.apply("ADDED", cm("a", "2", "2", { labels: { app: "y" } }));
  cache.apply("ADDED", cm("b", "3", "3", { labels: { app: "x" } }));
  assert.equal(cache.list().length, 3);
  assert.deepEqual(cache.list({ namespace: "a" }).map(objectKey).sort(), ["a/1", "a/2"]);
  assert.deepEqual(cache.list({ labels: { app: "x" } }).map(objectKey).sort(), ["a/1", "b/3"]);
  assert.deepEqual(cache.list({ namespace: "a", labels: { app: "x" } }).map(objectKey), ["a/1"]);
  assert.throws(() => cache.byIndex("nope", "x"), /no index/);
});

Deno.test("store: a relist swaps contents and emits only the difference", () => {
  const cache = new Cache<ConfigMap>("configmaps");
  cache.replace([cm("a", "keep", "1"), cm("a", "change", "2"), cm("a", "gone", "3")], {
    synced: true,
  });
  const events: StoreEvent<ConfigMap>[] = [];
  cache.subscribe((e) => events.push(e));
  cache.replace([cm("a", "keep", "1"), cm("a", "change", "9"), cm("a", "new", "10")]);
  assert.deepEqual(
    events.map((e) => `${e.type} ${objectKey(e.object)}`).sort(),
    ["added a/new", "deleted a/gone", "updated a/change"],
  );
  assert.equal(events.find((e) => e.type === "updated")?.old?.metadata?.resourceVersion, "2");
  assert.deepEqual(cache.list().map(objectKey).sort(), ["a/change", "a/keep", "a/new"]);
  assert.deepEqual(cache.byIndex("namespace", "a").length, 3);
});

Deno.test("store: a relist of one namespace leaves the others alone", () => {
  const cache = new Cache<ConfigMap>("configmaps");
  cache.replace([cm("a", "1", "1")], { namespace: "a" });
  cache.replace([cm("b", "2", "2")], { namespace: "b" });
  cache.replace([], { namespace: "a" });
  assert.deepEqual(cache.list().map(objectKey), ["b/2"]);
});

Deno.test("store: a throwing listener does not stop the others", () => {
  const cache = new Cache<ConfigMap>("configmaps");
  let reached = false;
  const originalError = console.error;
  console.error = () => {};
  try {
    cache.subscribe(() => {
      throw new Error("bug");
    });
    cache.subscribe(() => reached = true);
    cache.apply("ADDED", cm("a", "x", "1"));
  } finally {
    console.error = originalError;
  }
  assert.equal(reached, true);
});

Deno.test("store: controllerOf finds the controller ownerReference", () => {
  assert.equal(controllerOf(cm("a", "x", "1", { owner: "u" }))?.uid, "u");
  assert.equal(controllerOf(cm("a", "x", "1")), undefined);
});

Deno.test("store: only the first list of a scope is flagged as the initial list", () => {
  const cache = new Cache<KubeObject>("configmaps");
  const events: StoreEvent<KubeObject>[] = [];
  cache.subscribe((e) => events.push(e));
  const obj = (ns: string, name: string, rv = "1") => ({
    metadata: { namespace: ns, name, resourceVersion: rv },
  });
  cache.replace([obj("a", "x")], { namespace: "a" });
  cache.replace([obj("b", "y")], { namespace: "b", synced: true });
  cache.apply("ADDED", obj("a", "z"));
  cache.replace([obj("a", "x"), obj("a", "z"), obj("a", "w")], { namespace: "a" });
  assert.deepEqual(events.map((e) => `${e.object.metadata?.name}:${e.initialList ?? false}`), [
    "x:true",
    "y:true",
    "z:false",
    "w:false",
  ]);
});
