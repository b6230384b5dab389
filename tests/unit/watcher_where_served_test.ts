// A kind watched only where the API server serves it (runtime/watch/watcher.ts `whereServed`, the
// activation condition of the PodGroup row in controllers/minicluster/kinds/child_kinds.ts): a 404 on
// its list does not fail the watcher; it is synced and empty, and watched once it is served.
import assert from "node:assert/strict";
import { ApiError } from "../../runtime/client/errors.ts";
import { Watcher, WatcherError } from "../../runtime/watch/watcher.ts";
import { FakeApiClient } from "../../testing/fake_api.ts";
import type { PodGroup } from "../../controllers/minicluster/children/gang.ts";
import { PodGroups } from "../../controllers/minicluster/gang/pod_group.ts";
import { eventually } from "../harness.ts";

const notFound = new ApiError({
  code: 404,
  reason: "NotFound",
  message: "the server could not find the requested resource",
});

/** A fake API server that answers 404 to every PodGroup request while `served.now` is false. */
function apiServing(served: { now: boolean }): FakeApiClient {
  const api = new FakeApiClient();
  api.react((
    r,
  ) => (!served.now && r.resource === "podgroups.scheduling.k8s.io" ? notFound : undefined));
  return api;
}

const group: PodGroup = {
  apiVersion: "scheduling.k8s.io/v1beta1",
  kind: "PodGroup",
  metadata: { namespace: "a", name: "flux" },
};

Deno.test("watcher whereServed: a kind the API server does not serve is synced and empty, then watched once served", async () => {
  const served = { now: false };
  const api = apiServing(served);
  api.seed(PodGroups, group);
  const watcher = new Watcher<PodGroup>(api, PodGroups, {
    namespaces: ["a", "b"],
    backoff: { initialMs: 10, maxMs: 40 },
    whereServed: { recheckMs: 20 },
  });
  watcher.start();
  try {
    await watcher.synced;
    assert.ok(watcher.store.hasSynced);
    assert.deepEqual(watcher.store.list(), []);
    served.now = true;
    await eventually(() => assert.ok(watcher.store.get("a", "flux")), { timeoutMs: 5_000 });
  } finally {
    await watcher.stop();
  }
});

Deno.test("watcher whereServed: without it, a kind not served stops the watcher", async () => {
  const watcher = new Watcher<PodGroup>(apiServing({ now: false }), PodGroups, {
    backoff: { initialMs: 10, maxMs: 40 },
  });
  watcher.start();
  await assert.rejects(watcher.synced, WatcherError);
  await watcher.stop();
});
