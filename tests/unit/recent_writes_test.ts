import assert from "node:assert/strict";
import { RecentWrites } from "../../controllers/minicluster/recent_writes.ts";

const obj = (rv: string, tag = "") => ({
  metadata: { name: "a", namespace: "ns", resourceVersion: rv, labels: { tag } },
});

Deno.test("recent writes: our write wins until the cache moves past the version it replaced", () => {
  const memo = new RecentWrites();
  const cached = obj("1");
  memo.record("Job", cached, obj("2", "ours"));
  assert.equal(memo.view("Job", "ns", "a", cached)?.metadata?.resourceVersion, "2");
  // The cache caught up (or someone wrote after us): the cache wins and the memo is dropped.
  const newer = obj("3");
  assert.equal(memo.view("Job", "ns", "a", newer), newer);
  assert.equal(memo.view("Job", "ns", "a", cached), cached);
});

Deno.test("recent writes: a create is seen before the cache has the object", () => {
  const memo = new RecentWrites();
  memo.record("Secret", undefined, obj("5"));
  assert.equal(memo.view("Secret", "ns", "a", undefined)?.metadata?.resourceVersion, "5");
  assert.equal(memo.view("Secret", "other", "a", undefined), undefined);
});

Deno.test("recent writes: chained writes keep the version the cache still shows", () => {
  const memo = new RecentWrites();
  const cached = obj("1");
  memo.record("MiniCluster", cached, obj("2"));
  memo.record("MiniCluster", obj("2"), obj("3"));
  assert.equal(memo.view("MiniCluster", "ns", "a", cached)?.metadata?.resourceVersion, "3");
  memo.forget("MiniCluster", obj("3"));
  assert.equal(memo.view("MiniCluster", "ns", "a", cached), cached);
});
