/**
 * "Caches only Secrets with its label", on the real kube-apiserver: the operator's Secret cache is
 * the watch `miniClusterStores` asks for, and the API server filters it by the label selector
 * that watch carries, so a Secret of someone else's never enters the operator's memory — neither
 * one that existed before the list, nor one created while it watches — and a Secret that loses
 * the label leaves the cache. Of its own Secrets it keeps digests, not the values.
 */
import assert from "node:assert/strict";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import { miniClusterStores, type WatchSpec } from "../../controllers/minicluster/controller.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
} from "../../controllers/minicluster/children/names.ts";
import type { KubeObject, Store } from "../../runtime/cache/store.ts";
import type { ResourceType } from "../../runtime/client/resources.ts";
import { Secrets } from "../../runtime/client/resources.ts";
import { Watcher } from "../../runtime/watch/watcher.ts";
import { eventually, integrationTest, type TestEnv } from "../harness.ts";

const OPERATORS = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
const VALUE = "a secret of someone's";

function secret(env: TestEnv, name: string, labels?: Record<string, string>): Secret {
  return {
    metadata: { name, namespace: env.namespace, ...(labels ? { labels } : {}) },
    stringData: { key: VALUE },
  };
}

/** Names of the Secrets in the cache, sorted. */
function cached(store: Store<KubeObject>): string[] {
  return store.list().map((s) => s.metadata?.name ?? "").sort();
}

integrationTest(
  "Secret cache: only Secrets with the operator's label enter it, before and after the list",
  async (env) => {
    // Before the operator lists: one of its own, one of nobody's, one of another manager's.
    await env.client.create(Secrets, secret(env, "ours-early", OPERATORS));
    await env.client.create(Secrets, secret(env, "plain-early"));
    await env.client.create(
      Secrets,
      secret(env, "other-manager", { [MANAGED_BY_LABEL]: "helm" }),
    );

    // The operator's stores, with the Secret row's watch started on the real API server in the
    // test's namespace exactly as asked for (selector, transform, indexes).
    let secretSpec: { labelSelector?: string } | undefined;
    let watcher: Watcher<KubeObject> | undefined;
    const stores = miniClusterStores(<T extends KubeObject>(
      rt: ResourceType,
      spec?: WatchSpec,
    ) => {
      const w = new Watcher<KubeObject>(env.client, rt, {
        namespaces: [env.namespace],
        labelSelector: spec?.labelSelector,
        fieldSelector: spec?.fieldSelector,
        transform: spec?.transform,
        indexes: spec?.indexes,
      });
      if (rt === Secrets) {
        secretSpec = spec;
        watcher = w;
        w.start();
      }
      return w.store as unknown as Store<T>;
    });
    assert.ok(watcher, "the operator watches Secrets");
    assert.equal(
      secretSpec?.labelSelector,
      `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`,
      "the Secret watch carries the operator's label selector",
    );
    const store = stores.secrets as unknown as Store<KubeObject>;
    try {
      await watcher.synced;
      assert.deepEqual(cached(store), ["ours-early"], "the list brings only the labelled Secret");
      // And of that one only digests: neither the value nor its base64 is in memory.
      const kept = JSON.stringify(store.get(env.namespace, "ours-early"));
      assert.ok(!kept.includes(VALUE) && !kept.includes(btoa(VALUE)), kept);

      // While it watches: a Secret without the label, then one with it. Events of one watch come
      // in resourceVersion order, so once the second is cached the first would have been too.
      await env.client.create(Secrets, secret(env, "plain-late"));
      await env.client.create(Secrets, secret(env, "ours-late", OPERATORS));
      await eventually(() => assert.ok(store.get(env.namespace, "ours-late")));
      assert.deepEqual(cached(store), ["ours-early", "ours-late"]);

      // The label taken off one and put on another: the cache follows the selector.
      await env.client.patch(Secrets, env.namespace, "ours-early", {
        metadata: { labels: { [MANAGED_BY_LABEL]: null } },
      }, "merge");
      await env.client.patch(Secrets, env.namespace, "plain-early", {
        metadata: { labels: OPERATORS },
      }, "merge");
      await eventually(() =>
        assert.deepEqual(cached(store), ["ours-late", "plain-early"], "the labelled ones now")
      );
    } finally {
      await watcher.stop();
    }
  },
);
