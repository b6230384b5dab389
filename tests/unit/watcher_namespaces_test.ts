// A watcher of several namespaces when some refuse it (runtime/watch/watcher.ts): the namespaced install
// binds the operator by a RoleBinding in each namespace, which goes when the namespace is deleted.
// The others are served, the refused one is reported and served again once it answers.
import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import { Watcher, WatcherError } from "../../runtime/watch/watcher.ts";
import { FakeApiClient } from "../../testing/fake_api.ts";
import { eventually } from "../harness.ts";

const forbidden = (namespace: string) =>
  new ApiError({
    code: 403,
    reason: "Forbidden",
    message:
      `configmaps is forbidden: cannot list resource "configmaps" in the namespace "${namespace}"`,
  });

/** A fake API server that refuses every request in the namespaces of `refused`. */
function apiRefusing(refused: Set<string>): FakeApiClient {
  const api = new FakeApiClient();
  api.react((r) => (r.namespace && refused.has(r.namespace) ? forbidden(r.namespace) : undefined));
  return api;
}

const configMap = (namespace: string, name: string): ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { namespace, name },
});

const FAST = { initialMs: 10, maxMs: 40 };

Deno.test("watcher: a refused namespace is reported and does not hold up the others; it is served once it answers", async () => {
  const refused = new Set(["b"]);
  const api = apiRefusing(refused);
  api.seed(ConfigMaps, configMap("a", "one"));
  const reports: [string, string | undefined][] = [];
  const watcher = new Watcher<ConfigMap>(api, ConfigMaps, {
    namespaces: ["a", "b", "c"],
    backoff: FAST,
    metrics: {
      restarted() {},
      relisted() {},
      event() {},
      notServed: (_resource, namespace, reason) => reports.push([namespace, reason]),
    },
  });
  watcher.start();
  try {
    await watcher.synced;
    assert.ok(watcher.store.hasSynced);
    assert.ok(watcher.store.get("a", "one"));
    assert.deepEqual([...watcher.notServed], [["b", "Forbidden"]]);
    // Reported once, however often the retries are refused.
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(reports, [["b", "Forbidden"]]);

    api.seed(ConfigMaps, configMap("b", "two"));
    refused.delete("b");
    await eventually(() => assert.ok(watcher.store.get("b", "two")), { timeoutMs: 5_000 });
    assert.deepEqual([...watcher.notServed], []);
    assert.deepEqual(reports, [["b", "Forbidden"], ["b", undefined]]);
  } finally {
    await watcher.stop();
  }
});

Deno.test("watcher: every namespace refused is the RBAC wrong as a whole: stops, or waits when asked", async () => {
  const api = apiRefusing(new Set(["a", "b"]));
  const strict = new Watcher<ConfigMap>(api, ConfigMaps, { namespaces: ["a", "b"], backoff: FAST });
  strict.start();
  await assert.rejects(strict.synced, WatcherError);
  await strict.stop();

  const patient = new Watcher<ConfigMap>(api, ConfigMaps, {
    namespaces: ["a", "b"],
    backoff: FAST,
    stopOnForbidden: false,
  });
  patient.start();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(patient.store.hasSynced, false);
  assert.deepEqual([...patient.notServed.keys()].sort(), ["a", "b"]);
  await patient.stop();
});
