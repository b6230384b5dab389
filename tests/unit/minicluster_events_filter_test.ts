import assert from "node:assert/strict";
import type { MiniCluster } from "../../api/mod.ts";
import { FINALIZER } from "../../controllers/minicluster/children/names.ts";
import { interestingMiniClusterEvent } from "../../controllers/minicluster/controller.ts";

function mc(meta: Partial<NonNullable<MiniCluster["metadata"]>>, status?: unknown): MiniCluster {
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "mc", namespace: "ns", uid: "u1", generation: 1, ...meta },
    spec: { size: 2, containers: [{ image: "x" }] },
    ...(status ? { status } : {}),
  } as MiniCluster;
}

const updated = (old: MiniCluster, object: MiniCluster) =>
  interestingMiniClusterEvent({ type: "updated", old, object });

Deno.test("MiniCluster events: adds and deletes always count", () => {
  assert.ok(interestingMiniClusterEvent({ type: "added", object: mc({}) }));
  assert.ok(interestingMiniClusterEvent({ type: "deleted", object: mc({}) }));
});

Deno.test("MiniCluster events: our own status writes and finalizer add wake nobody", () => {
  assert.ok(!updated(mc({}), mc({}, { readyPods: 2 })));
  assert.ok(!updated(mc({}), mc({ finalizers: [FINALIZER] })));
  assert.ok(!updated(mc({ finalizers: ["other"] }), mc({ finalizers: ["other", FINALIZER] })));
});

Deno.test("MiniCluster events: spec, metadata, deletion, successors and others' finalizers count", () => {
  assert.ok(updated(mc({}), mc({ generation: 2 })));
  assert.ok(updated(mc({}), mc({ labels: { a: "b" } })));
  assert.ok(updated(mc({}), mc({ annotations: { a: "b" } })));
  assert.ok(updated(mc({}), mc({ deletionTimestamp: "2026-11-21T00:00:00Z" })));
  assert.ok(updated(mc({}), mc({ finalizers: ["other"] })));
  assert.ok(updated(mc({ finalizers: [FINALIZER] }), mc({})), "our finalizer removed");
  assert.ok(updated(mc({}), mc({ finalizers: [FINALIZER, "other"] })));
  // A coalesced delete-and-recreate: a new object under the name, whatever else it shares.
  assert.ok(updated(mc({}), mc({ uid: "u2", finalizers: [FINALIZER] })));
});
