/**
 * The client against a real kube-apiserver: CRUD, list pagination, watch, server-side apply,
 * patches, delete preconditions and error mapping.
 */
import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import type { Status } from "kubernetes-types/meta/v1.d.ts";
import {
  ApiError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isNotFound,
  isUnauthorized,
  KubeClient,
  type RequestEvent,
  type WatchEvent,
} from "../../runtime/client/client.ts";
import { inClusterConnection, loadKubeconfig } from "../../runtime/config/kubeconfig.ts";
import { ConfigMaps, resourcePath, ServiceAccounts } from "../../runtime/client/resources.ts";
import { eventually, integrationTest } from "../harness.ts";
import { MiniClusters } from "../../api/resource.ts";

const MANAGER = "client-test";

function configMap(namespace: string, name: string, data: Record<string, string>): ConfigMap {
  return { metadata: { name, namespace, labels: { app: "client-test" } }, data };
}

integrationTest("client: create, get, list, errors, patch and delete a ConfigMap", async ({
  client,
  namespace,
}) => {
  const created = await client.create(ConfigMaps, configMap(namespace, "one", { a: "1" }));
  assert.equal(created.metadata?.name, "one");
  assert.ok(created.metadata?.uid && created.metadata.resourceVersion);

  const got = await client.get<ConfigMap>(ConfigMaps, namespace, "one");
  assert.deepEqual(got.data, { a: "1" });
  assert.equal(got.kind, "ConfigMap");

  // NotFound and AlreadyExists come back as ApiError with the API's Status.
  await assert.rejects(client.get(ConfigMaps, namespace, "missing"), (e) => {
    assert.ok(e instanceof ApiError && isNotFound(e));
    assert.equal(e.code, 404);
    assert.equal(e.reason, "NotFound");
    assert.match(e.status.message ?? "", /"missing" not found/);
    return true;
  });
  await assert.rejects(
    client.create(ConfigMaps, configMap(namespace, "one", {})),
    (e) => isAlreadyExists(e) && (e as ApiError).code === 409,
  );

  // Pagination: two objects, pages of one.
  await client.create(ConfigMaps, configMap(namespace, "two", { b: "2" }));
  const page1 = await client.list<ConfigMap>(ConfigMaps, {
    namespace,
    labelSelector: "app=client-test",
    limit: 1,
  });
  assert.equal(page1.items.length, 1);
  assert.ok(page1.metadata.continue, "a continue token for the next page");
  const page2 = await client.list<ConfigMap>(ConfigMaps, {
    namespace,
    labelSelector: "app=client-test",
    limit: 1,
    continue: page1.metadata.continue,
  });
  assert.deepEqual([...page1.items, ...page2.items].map((c) => c.metadata?.name).sort(), [
    "one",
    "two",
  ]);
  const all = await client.listAll<ConfigMap>(ConfigMaps, {
    namespace,
    labelSelector: "app=client-test",
    limit: 1,
  });
  assert.equal(all.items.length, 2);
  assert.ok(all.metadata.resourceVersion);
  // One streamed list, items handed on one by one; pages of one are followed too. The server's
  // managedFields are cut when asked for.
  for (const limit of [undefined, 1]) {
    for (const dropManagedFields of [false, true]) {
      const streamed: ConfigMap[] = [];
      const meta = await client.listEach<ConfigMap>(ConfigMaps, (cm) => streamed.push(cm), {
        namespace,
        labelSelector: "app=client-test",
        limit,
        dropManagedFields,
      });
      assert.ok(meta.resourceVersion);
      assert.deepEqual(streamed.map((c) => c.metadata?.name).sort(), ["one", "two"]);
      assert.deepEqual(streamed.find((c) => c.metadata?.name === "two")?.data, { b: "2" });
      for (const c of streamed) {
        assert.equal(
          c.metadata?.uid,
          all.items.find((a) => a.metadata?.name === c.metadata?.name)
            ?.metadata?.uid,
        );
        if (dropManagedFields) assert.deepEqual(c.metadata?.managedFields, []);
        else assert.ok(c.metadata?.managedFields?.length);
      }
    }
  }

  // Merge, JSON and strategic patches.
  const merged = await client.patch<ConfigMap>(ConfigMaps, namespace, "one", {
    data: { a: null, c: "3" },
  }, "merge");
  assert.deepEqual(merged.data, { c: "3" });
  const jsonPatched = await client.patch<ConfigMap>(ConfigMaps, namespace, "one", [
    { op: "add", path: "/data/d", value: "4" },
  ], "json");
  assert.deepEqual(jsonPatched.data, { c: "3", d: "4" });
  const strategic = await client.patch<ConfigMap>(ConfigMaps, namespace, "one", {
    metadata: { labels: { extra: "yes" } },
  }, "strategic");
  assert.equal(strategic.metadata?.labels?.extra, "yes");

  // Replace with a stale resourceVersion is a Conflict.
  await assert.rejects(
    client.replace(ConfigMaps, { ...got, data: { stale: "yes" } }),
    (e) => isConflict(e),
  );

  // Delete with a stale uid precondition is refused with 409; the right one deletes.
  await assert.rejects(
    client.delete(ConfigMaps, namespace, "one", {
      preconditions: { uid: "00000000-0000-0000-0000-000000000000" },
    }),
    (e) => isConflict(e) && (e as ApiError).code === 409,
  );
  const status = await client.delete(ConfigMaps, namespace, "one", {
    propagationPolicy: "Background",
    preconditions: {
      uid: created.metadata?.uid,
      resourceVersion: strategic.metadata?.resourceVersion,
    },
  }) as Status;
  assert.equal(status.status, "Success");
  await assert.rejects(client.get(ConfigMaps, namespace, "one"), isNotFound);
  await assert.rejects(client.delete(ConfigMaps, namespace, "one"), isNotFound);
});

integrationTest("client: server-side apply is idempotent and tracks field ownership", async ({
  client,
  namespace,
}) => {
  const desired = configMap(namespace, "applied", { key: "v1" });
  const first = await client.apply(ConfigMaps, desired, { fieldManager: MANAGER });
  assert.deepEqual(first.data, { key: "v1" });
  assert.ok(first.metadata?.managedFields?.some((f) => f.manager === MANAGER));

  // The same apply again changes nothing: the resourceVersion does not move.
  const second = await client.apply(ConfigMaps, desired, { fieldManager: MANAGER, force: true });
  assert.equal(second.metadata?.resourceVersion, first.metadata?.resourceVersion);

  // Another manager that wants a different value for an owned field conflicts unless forced.
  const rival = configMap(namespace, "applied", { key: "rival" });
  await assert.rejects(
    client.apply(ConfigMaps, rival, { fieldManager: "rival" }),
    (e) => isConflict(e) && (e as ApiError).code === 409,
  );
  const forced = await client.apply(ConfigMaps, rival, { fieldManager: "rival", force: true });
  assert.deepEqual(forced.data, { key: "rival" });
  assert.notEqual(forced.metadata?.resourceVersion, first.metadata?.resourceVersion);

  // Dropping a field from the applied config removes it (the manager owned it alone).
  await client.apply(ConfigMaps, configMap(namespace, "multi", { a: "1", b: "2" }), {
    fieldManager: MANAGER,
  });
  const shrunk = await client.apply(ConfigMaps, configMap(namespace, "multi", { a: "1" }), {
    fieldManager: MANAGER,
  });
  assert.deepEqual(shrunk.data, { a: "1" });
});

integrationTest(
  "client: server-side apply carries any JSON string, control characters included",
  async ({
    client,
    namespace,
  }) => {
    // The apply body goes as application/apply-patch+yaml: characters YAML does not accept raw
    // (DEL, C1 controls, BOM, U+FFFE/U+FFFF, the line and paragraph separators) must still arrive.
    const odd = "a\u007fb\u0080c\u0085d\u009fe\ufefff\ufffeg\uffffh\u2028i\u2029j\u0001k\tl\u00a0m";
    const applied = await client.apply(
      ConfigMaps,
      configMap(namespace, "odd", { [`k`]: odd, plain: "€ ✓ 𝄞" }),
      { fieldManager: MANAGER },
    );
    assert.deepEqual(applied.data, { k: odd, plain: "€ ✓ 𝄞" });
    const got = await client.get<ConfigMap>(ConfigMaps, namespace, "odd");
    assert.equal(got.data?.k, odd);
  },
);

integrationTest("client: watch sees ADDED, MODIFIED and DELETED, then stops on abort", async ({
  client,
  namespace,
}) => {
  // Only our objects: the controller manager may publish kube-root-ca.crt meanwhile.
  const labelSelector = "app=client-test";
  const list = await client.list<ConfigMap>(ConfigMaps, { namespace, labelSelector });
  const abort = new AbortController();
  const events: WatchEvent<ConfigMap>[] = [];
  const consumer = (async () => {
    for await (
      const ev of client.watch<ConfigMap>(ConfigMaps, {
        namespace,
        labelSelector,
        resourceVersion: list.metadata.resourceVersion,
        allowWatchBookmarks: true,
        signal: abort.signal,
      })
    ) {
      if (ev.type !== "BOOKMARK") events.push(ev);
    }
  })();
  try {
    await client.create(ConfigMaps, configMap(namespace, "watched", { v: "1" }));
    await client.patch(ConfigMaps, namespace, "watched", { data: { v: "2" } }, "merge");
    await client.delete(ConfigMaps, namespace, "watched");
    await eventually(() => assert.equal(events.length, 3), { timeoutMs: 10_000 });
    assert.deepEqual(events.map((e) => [e.type, e.object.metadata?.name, e.object.data?.v]), [
      ["ADDED", "watched", "1"],
      ["MODIFIED", "watched", "2"],
      ["DELETED", "watched", "2"],
    ]);
  } finally {
    abort.abort();
    await consumer;
  }
});

integrationTest("client: a watch from a compacted-away resourceVersion throws 410", async ({
  client,
  namespace,
}) => {
  // A watch cache serves versions from the revision of its first list on. The MiniCluster
  // type's cache began when the harness installed the CRD, after the cluster's own start-up
  // writes, so "1" is older. (A built-in type's cache may begin at the first revisions of a fresh
  // etcd, which is how kube-apiserver 1.37 starts: there "1" is still served.) A CRD installed
  // just now may not be served from its cache yet: retried until it is.
  await eventually(() =>
    assert.rejects(
      async () => {
        for await (const _ of client.watch(MiniClusters, { namespace, resourceVersion: "1" })) {
          // no event before the error
        }
      },
      (e) => isGone(e) && (e as ApiError).code === 410,
    )
  );
});

integrationTest("client: onRequest reports verb, resource and code", async ({
  kubeconfig,
  namespace,
}) => {
  const seen: RequestEvent[] = [];
  const client = await KubeClient.fromKubeconfig(kubeconfig, undefined, {
    onRequest: (e) => seen.push(e),
    userAgent: "client-test/1",
  });
  try {
    await client.apply(ConfigMaps, configMap(namespace, "metrics", {}), { fieldManager: MANAGER });
    await client.get(ConfigMaps, namespace, "metrics");
    await client.get(ConfigMaps, namespace, "absent").catch(() => {});
    await client.list(ConfigMaps, { namespace });
    await client.patch(ConfigMaps, namespace, "metrics", { data: { x: "y" } }, "merge");
    await client.delete(ConfigMaps, namespace, "metrics");
    assert.deepEqual(seen.map((e) => `${e.verb} ${e.resource} ${e.code}`), [
      "apply configmaps 201",
      "get configmaps 200",
      "get configmaps 404",
      "list configmaps 200",
      "patch configmaps 200",
      "delete configmaps 200",
    ]);
    assert.ok(seen.every((e) => e.seconds >= 0 && e.seconds < 30));
  } finally {
    client.close();
  }
});

integrationTest("client: in-cluster ServiceAccount token is read from disk and re-read", async ({
  client,
  namespace,
  kubeconfig,
}) => {
  // A ServiceAccount that may only `get` ConfigMaps, and a short-lived bound token for it.
  await client.create(ServiceAccounts, { metadata: { name: "reader", namespace } });
  await client.request("POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "get-configmaps" },
    rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }],
  });
  await client.request(
    "POST",
    `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "reader" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "get-configmaps" },
      subjects: [{ kind: "ServiceAccount", name: "reader", namespace }],
    },
  );
  const requestToken = async () =>
    (await client.request<{ status: { token: string } }>(
      "POST",
      resourcePath(ServiceAccounts, { namespace, name: "reader", subresource: "token" }),
      {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: 600 },
      },
    )).status.token;

  // Lay out what the kubelet mounts into a Pod, and the service env it sets.
  const admin = await loadKubeconfig(kubeconfig);
  const url = new URL(admin.server);
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/token`, await requestToken());
  await Deno.writeTextFile(`${dir}/ca.crt`, admin.caCerts?.join("\n") ?? "");
  await Deno.writeTextFile(`${dir}/namespace`, namespace);
  const env = new Map([
    ["KUBERNETES_SERVICE_HOST", url.hostname.replace(/^\[|\]$/g, "")],
    ["KUBERNETES_SERVICE_PORT", url.port || "443"],
  ]);
  const conn = await inClusterConnection(dir, env);
  assert.equal(conn.namespace, namespace);
  // tokenRefreshMs 0: every request reads the file, as after a rotation by the kubelet.
  const sa = new KubeClient(conn, { tokenRefreshMs: 0 });
  try {
    await client.create(ConfigMaps, configMap(namespace, "visible", { v: "1" }));
    const cm = await sa.get<ConfigMap>(ConfigMaps, sa.namespace, "visible");
    assert.deepEqual(cm.data, { v: "1" });
    await assert.rejects(sa.list(ConfigMaps, { namespace }), (e) => isForbidden(e));

    await Deno.writeTextFile(`${dir}/token`, "not-a-token");
    await assert.rejects(sa.get(ConfigMaps, namespace, "visible"), (e) => isUnauthorized(e));
    await Deno.writeTextFile(`${dir}/token`, await requestToken()); // rotated
    assert.deepEqual((await sa.get<ConfigMap>(ConfigMaps, namespace, "visible")).data, { v: "1" });
  } finally {
    sa.close();
    await Deno.remove(dir, { recursive: true });
  }
});

integrationTest("client: a watch ends quietly when the server-side timeout expires", async ({
  client,
  namespace,
}) => {
  // A selector no object has: with a controller manager running, kube-root-ca.crt may be
  // published into the fresh namespace between the list and the watch (CI caught that).
  const labelSelector = "test=watch-timeout";
  const { metadata } = await client.list(ConfigMaps, { namespace, labelSelector });
  const start = performance.now();
  let events = 0;
  const watch = client.watch(ConfigMaps, {
    namespace,
    labelSelector,
    resourceVersion: metadata.resourceVersion,
    timeoutSeconds: 1,
  });
  for await (const _ of watch) events++;
  assert.equal(events, 0, "nothing changed since the list");
  assert.ok(performance.now() - start >= 900, "the server held the stream for about a second");
});
