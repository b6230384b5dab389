import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { FakeClock } from "../../runtime/core/clock.ts";
import { OWN_WRITE_TTL_MS, OwnWrites } from "../../runtime/watch/own_writes.ts";
import { ConfigMaps, Secrets } from "../../runtime/client/resources.ts";
import { Cache } from "../../runtime/cache/store.ts";
import { FakeApiClient } from "../../testing/fake_api.ts";

const cm = (rv: string, tag = ""): ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "a", namespace: "ns", resourceVersion: rv, labels: { tag } },
});

function setUp() {
  const clock = new FakeClock();
  const api = new FakeApiClient();
  const cache = new Cache<ConfigMap>("configmaps");
  const writes = new OwnWrites({ clock });
  const store = writes.over(cache);
  const client = writes.recording(api);
  return { clock, api, cache, store, client };
}

Deno.test("own writes: our write shows until the cache moves past the version it replaced", async () => {
  const { api, cache, store, client } = setUp();
  const first = await api.create(ConfigMaps, cm("", "old"));
  cache.replace([first], { synced: true });
  const written = await client.apply<ConfigMap>(ConfigMaps, cm("", "ours"), {
    fieldManager: "test",
  });
  assert.equal(store.get("ns", "a")?.metadata?.resourceVersion, written.metadata?.resourceVersion);
  assert.equal(store.get("ns", "a")?.metadata?.labels?.tag, "ours");
  // The cache caught up (or someone wrote after us): the cache wins and the memory is dropped.
  const newer = { ...cm("999", "theirs") };
  cache.apply("MODIFIED", newer);
  assert.equal(store.get("ns", "a"), newer);
  cache.apply("MODIFIED", first);
  assert.equal(store.get("ns", "a"), first, "dropped, not shown again for the old version");
});

Deno.test("own writes: a create is seen before the cache has the object", async () => {
  const { store, client } = setUp();
  await client.create(ConfigMaps, cm(""));
  assert.ok(store.get("ns", "a"));
  assert.equal(store.get("other", "a"), undefined);
  assert.equal(store.getByKey("ns/a")?.metadata?.name, "a");
});

Deno.test("own writes: chained writes keep the version the cache still shows; a delete forgets", async () => {
  const { api, cache, store, client } = setUp();
  const first = await api.create(ConfigMaps, cm(""));
  cache.replace([first], { synced: true });
  await client.apply(ConfigMaps, cm("", "1"), { fieldManager: "test" });
  const second = await client.apply<ConfigMap>(ConfigMaps, cm("", "2"), { fieldManager: "test" });
  assert.equal(store.get("ns", "a")?.metadata?.resourceVersion, second.metadata?.resourceVersion);
  await client.delete(ConfigMaps, "ns", "a");
  assert.equal(store.get("ns", "a"), first, "the cache's until its delete event comes");
});

Deno.test("own writes: kept as the cache would keep them, for the TTL only, untracked kinds not at all", async () => {
  const { clock, cache, client } = setUp();
  const writes = new OwnWrites({ clock });
  const store = writes.over(cache, (o) => ({ ...o, data: { digest: "x" } }));
  const recording = writes.recording(client);
  await recording.create(ConfigMaps, { ...cm(""), data: { big: "value" } });
  assert.deepEqual(store.get("ns", "a")?.data, { digest: "x" });
  assert.ok(Object.isFrozen(store.get("ns", "a")), "frozen like cached objects");
  await clock.advance(OWN_WRITE_TTL_MS);
  assert.equal(store.get("ns", "a"), undefined, "a lost event is outlived");
  await recording.create(Secrets, { metadata: { name: "s", namespace: "ns" } });
  assert.equal(store.get("ns", "s"), undefined);
});

Deno.test("own writes: lists and the owner index see a child created a moment ago", async () => {
  const { cache, store, client } = setUp();
  cache.replace([], { synced: true });
  const owned = (name: string, uid: string): ConfigMap => ({
    metadata: {
      name,
      namespace: "ns",
      labels: { app: "x" },
      ownerReferences: [{ apiVersion: "v1", kind: "P", name: "p", uid, controller: true }],
    },
  });
  await client.create(ConfigMaps, owned("mine", "u1"));
  await client.create(ConfigMaps, owned("theirs", "u2"));
  assert.deepEqual(store.byIndex("owner", "u1").map((o) => o.metadata?.name), ["mine"]);
  assert.deepEqual(store.list({ namespace: "ns", labels: { app: "x" } }).length, 2);
  assert.deepEqual(store.list({ namespace: "other" }), []);
  assert.deepEqual(store.byIndex("namespace", "ns").length, 2);
});

Deno.test("own writes: a store's own index sees a write a moment ago too", async () => {
  const clock = new FakeClock();
  const byTag = (o: ConfigMap) => [o.metadata?.labels?.tag ?? ""];
  const cache = new Cache<ConfigMap>("configmaps", { tag: byTag });
  const writes = new OwnWrites({ clock });
  const store = writes.over(cache, undefined, { tag: byTag });
  const api = new FakeApiClient();
  const client = writes.recording(api);
  cache.replace([await api.create(ConfigMaps, cm("", "old"))], { synced: true });
  await client.apply(ConfigMaps, cm("", "new"), { fieldManager: "test" });
  assert.deepEqual(store.byIndex("tag", "new").map((o) => o.metadata?.labels?.tag), ["new"]);
  assert.deepEqual(store.byIndex("tag", "old"), [], "what our write replaced is gone from it");
});
