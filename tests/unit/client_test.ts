/**
 * Pure parts of the client (paths, line splitting, watch events, error mapping) and the watch
 * stream reader against a local HTTP stream. The API semantics are tested against a real
 * kube-apiserver in tests/integration/client_test.ts; the local server here only produces bytes.
 */
import assert from "node:assert/strict";
import {
  ApiError,
  isAlreadyExists,
  isConflict,
  isGone,
  isNotFound,
  KubeClient,
  LineBuffer,
  parseWatchLine,
  type RequestEvent,
  type WatchEvent,
} from "../../runtime/client/client.ts";
import {
  apiVersionOf,
  ConfigMaps,
  CustomResourceDefinitions,
  Jobs,
  Namespaces,
  resourcePath,
} from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";

Deno.test("resources: paths for core, grouped, cluster-scoped and subresources", () => {
  assert.equal(resourcePath(ConfigMaps), "/api/v1/configmaps");
  assert.equal(resourcePath(ConfigMaps, { namespace: "ns" }), "/api/v1/namespaces/ns/configmaps");
  assert.equal(
    resourcePath(Jobs, { namespace: "ns", name: "j" }),
    "/apis/batch/v1/namespaces/ns/jobs/j",
  );
  assert.equal(
    resourcePath(MiniClusters, { namespace: "ns", name: "mc", subresource: "status" }),
    "/apis/flux-framework.org/v1alpha2/namespaces/ns/miniclusters/mc/status",
  );
  assert.equal(resourcePath(Namespaces, { name: "ns" }), "/api/v1/namespaces/ns");
  assert.equal(
    resourcePath(CustomResourceDefinitions, { name: "x.y" }),
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y",
  );
  assert.throws(() => resourcePath(Namespaces, { namespace: "x" }), /cluster-scoped/);
  assert.throws(() => resourcePath(Jobs, { subresource: "status" }), /needs a name/);
  assert.equal(apiVersionOf(ConfigMaps), "v1");
  assert.equal(apiVersionOf(MiniClusters), "flux-framework.org/v1alpha2");
});

Deno.test("LineBuffer: keeps partial lines and split UTF-8 sequences across chunks", () => {
  const buf = new LineBuffer();
  const bytes = new TextEncoder().encode('{"a":"é"}\n{"b":2}\r\n\n{"c"');
  const out: string[] = [];
  // Feed one byte at a time: every possible cut point, including inside "é".
  for (const b of bytes) out.push(...buf.push(new Uint8Array([b])));
  assert.deepEqual(out, ['{"a":"é"}', '{"b":2}']);
  assert.deepEqual(buf.push(":3}"), []);
  assert.equal(buf.flush(), '{"c":3}');
  assert.equal(buf.flush(), undefined);
});

Deno.test("parseWatchLine: events pass through, ERROR becomes ApiError", () => {
  const ev = parseWatchLine<{ metadata: { resourceVersion: string } }>(
    '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"42"}}}',
  );
  assert.equal(ev.type, "BOOKMARK");
  assert.equal(ev.object.metadata.resourceVersion, "42");
  assert.throws(
    () =>
      parseWatchLine(
        '{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}',
        ConfigMaps,
      ),
    (e) => e instanceof ApiError && isGone(e) && e.code === 410 && /configmaps/.test(e.message),
  );
  assert.throws(() => parseWatchLine("{not json"), /malformed/);
  assert.throws(() => parseWatchLine('{"type":"WHAT"}'), /unknown watch event/);
});

Deno.test("ApiError: Status bodies and plain-text bodies map to code and reason", () => {
  const notFound = ApiError.fromResponse(
    404,
    JSON.stringify({
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      message: 'configmaps "x" not found',
      reason: "NotFound",
      details: { name: "x", kind: "configmaps" },
      code: 404,
    }),
  );
  assert.equal(notFound.code, 404);
  assert.equal(notFound.reason, "NotFound");
  assert.equal(notFound.status.details?.name, "x");
  assert.ok(isNotFound(notFound));
  const proxy = ApiError.fromResponse(503, "upstream connect error\n", "GET /api");
  assert.equal(proxy.reason, "ServiceUnavailable");
  assert.equal(proxy.status.message, "upstream connect error");
  const exists = new ApiError({ code: 409, reason: "AlreadyExists" });
  assert.ok(isAlreadyExists(exists) && !isConflict(exists));
  assert.ok(isConflict(new ApiError({ code: 409, reason: "Conflict" })));
  assert.ok(!isNotFound(new Error("404")));
});

/** A local server that writes the given chunks of a watch body (to exercise the reader only). */
function streamServer(chunks: string[], keepOpen = false) {
  const cancelled = Promise.withResolvers<void>();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (req) => {
    if (!new URL(req.url).searchParams.has("watch")) {
      return new Response("nope", { status: 400 });
    }
    const enc = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(ctrl) {
        const next = chunks.shift();
        if (next !== undefined) {
          await new Promise((r) => setTimeout(r, 1));
          ctrl.enqueue(enc.encode(next));
        } else if (!keepOpen) ctrl.close();
        else await cancelled.promise; // hold the stream open until the client goes away
      },
      cancel() {
        cancelled.resolve();
      },
    });
    return new Response(body, { headers: { "Content-Type": "application/json" } });
  });
  const port = (server.addr as Deno.NetAddr).port;
  return { server, port, cancelled: cancelled.promise };
}

Deno.test("watch: reads events split across chunks and throws ERROR events", async () => {
  const lines = [
    '{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}}\n',
    '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"2"}}}\n',
    '{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"gone"}}\n',
  ];
  const joined = lines.join("");
  const chunks = [joined.slice(0, 10), joined.slice(10, 95), joined.slice(95)];
  const { server, port } = streamServer(chunks);
  const requests: RequestEvent[] = [];
  const client = new KubeClient(
    { server: `http://127.0.0.1:${port}`, namespace: "default", token: "t" },
    { onRequest: (e) => requests.push(e) },
  );
  try {
    const seen: WatchEvent<{ metadata: { resourceVersion: string } }>[] = [];
    await assert.rejects(
      async () => {
        for await (
          const ev of client.watch<{ metadata: { resourceVersion: string } }>(ConfigMaps, {
            namespace: "ns",
            allowWatchBookmarks: true,
          })
        ) seen.push(ev);
      },
      (e) => isGone(e),
    );
    assert.deepEqual(seen.map((e) => [e.type, e.object.metadata.resourceVersion]), [
      ["ADDED", "1"],
      ["BOOKMARK", "2"],
    ]);
    assert.deepEqual(requests.map(({ verb, resource, code }) => ({ verb, resource, code })), [
      { verb: "watch", resource: "configmaps", code: 200 },
    ]);
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("watch: abort ends the iteration quietly and releases the stream", async () => {
  const { server, port, cancelled } = streamServer([
    '{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n',
  ], true);
  const client = new KubeClient({ server: `http://127.0.0.1:${port}`, namespace: "default" });
  const abort = new AbortController();
  try {
    let n = 0;
    for await (const _ of client.watch(ConfigMaps, { signal: abort.signal })) {
      n++;
      abort.abort();
    }
    assert.equal(n, 1);
    await cancelled; // the server saw the client go away
    // Already-aborted signals do not even connect.
    for await (const _ of client.watch(ConfigMaps, { signal: abort.signal })) assert.fail();
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("watch: breaking out of the loop releases the stream", async () => {
  const { server, port, cancelled } = streamServer([
    '{"type":"ADDED","object":{}}\n{"type":"ADDED","object":{}}\n',
  ], true);
  const client = new KubeClient({ server: `http://127.0.0.1:${port}`, namespace: "default" });
  try {
    for await (const _ of client.watch(ConfigMaps)) break;
    await cancelled;
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("request: non-2xx answers become ApiError and a timeout aborts", async () => {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    if (new URL(req.url).pathname.endsWith("/slow")) {
      await new Promise((r) => setTimeout(r, 300));
      return new Response("{}");
    }
    return new Response("plain failure", { status: 500 });
  });
  const port = (server.addr as Deno.NetAddr).port;
  const requests: RequestEvent[] = [];
  const client = new KubeClient(
    { server: `http://127.0.0.1:${port}`, namespace: "default" },
    { timeoutMs: 50, onRequest: (e) => requests.push(e) },
  );
  try {
    await assert.rejects(
      client.get(Jobs, "ns", "x"),
      (e) => e instanceof ApiError && e.code === 500 && e.reason === "InternalError",
    );
    await assert.rejects(
      client.request("GET", "/api/v1/namespaces/ns/configmaps/slow"),
      (e) => e instanceof DOMException && e.name === "TimeoutError",
    );
    assert.deepEqual(requests.map(({ verb, resource, code }) => ({ verb, resource, code })), [
      { verb: "get", resource: "jobs.batch", code: 500 },
      { verb: "get", resource: "configmaps", code: 0 },
    ]);
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("listEach: items as they arrive, pages followed, the timeout bounds a stall only", async () => {
  // Page 1 arrives in 30-byte chunks 150 ms apart (longer in all than the 400 ms timeout); page 2
  // (asked for with page 1's continue token) stalls for 2 s in the middle when "stall" is set. The
  // margins hold on a loaded machine, where the unit tier runs test files in parallel.
  const items = (from: number) => [0, 1, 2].map((i) => ({ metadata: { name: `cm-${from + i}` } }));
  let page1Sent = Infinity;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    const page2 = url.searchParams.get("continue") === "next";
    const body = JSON.stringify({
      kind: "ConfigMapList",
      metadata: { resourceVersion: page2 ? "9" : "7", continue: page2 ? undefined : "next" },
      items: items(page2 ? 3 : 0),
    });
    const bytes = new TextEncoder().encode(body);
    let at = 0;
    const stall = page2 && url.searchParams.has("labelSelector");
    return new Response(
      new ReadableStream<Uint8Array>({
        async pull(ctrl) {
          if (at >= bytes.length) {
            if (!page2) page1Sent = performance.now();
            return ctrl.close();
          }
          await new Promise((r) => setTimeout(r, stall && at === 30 ? 2_000 : page2 ? 0 : 150));
          ctrl.enqueue(bytes.slice(at, at += 30));
        },
      }),
    );
  });
  const port = (server.addr as Deno.NetAddr).port;
  const client = new KubeClient(
    { server: `http://127.0.0.1:${port}`, namespace: "default" },
    { timeoutMs: 400 },
  );
  try {
    const seen: string[] = [];
    let firstSeen = 0;
    const meta = await client.listEach<{ metadata: { name: string } }>(
      ConfigMaps,
      (cm) => {
        firstSeen ||= performance.now();
        seen.push(cm.metadata.name);
      },
      { namespace: "ns" },
    );
    assert.deepEqual(seen, ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4", "cm-5"]);
    assert.ok(firstSeen < page1Sent, "the first item was handed on before its page had ended");
    assert.deepEqual(meta, { resourceVersion: "7" });
    await assert.rejects(
      client.listEach(ConfigMaps, () => {}, { namespace: "ns", labelSelector: "stall" }),
      (e) => e instanceof DOMException && e.name === "TimeoutError",
    );
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("request: writes wait for a slot beyond maxWritesInFlight; reads and critical writes do not", async () => {
  let inFlight = 0;
  const most: Record<string, number> = {};
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const kind = req.method === "GET" ? "read" : req.url.includes("/leases/") ? "lease" : "write";
    inFlight++;
    most[kind] = Math.max(most[kind] ?? 0, inFlight);
    await new Promise((r) => setTimeout(r, 40));
    inFlight--;
    return new Response("{}");
  });
  const port = (server.addr as Deno.NetAddr).port;
  const client = new KubeClient(
    { server: `http://127.0.0.1:${port}`, namespace: "default" },
    { maxWritesInFlight: 2 },
  );
  try {
    const cm = (i: number) => `/api/v1/namespaces/ns/configmaps/c${i}`;
    await Promise.all([0, 1, 2, 3, 4, 5].map((i) => client.request("PATCH", cm(i), {})));
    assert.equal(most.write, 2);
    // Two writes hold both slots; a Lease renewal (critical, as the elector sends it) and reads
    // still go out beside them.
    const lease = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/leader";
    const writes = [client.request("PUT", cm(0), {}), client.request("PUT", cm(1), {})];
    await new Promise((r) => setTimeout(r, 10));
    await Promise.all([
      ...writes,
      client.request("PUT", lease, {}, { priority: "critical" }),
      client.request("GET", cm(2)),
      client.request("GET", cm(3)),
    ]);
    assert.ok(most.lease >= 3, `the Lease renewal waited: ${most.lease}`);
    assert.ok(most.read >= 4, `reads waited: ${most.read}`);
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("auth: a token file is re-read (rotation) and a 401 forces a fresh read, for lists too", async () => {
  const dir = await Deno.makeTempDir();
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, "one\n");
  let accept = "one";
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (req) => {
    const auth = req.headers.get("Authorization");
    if (auth !== `Bearer ${accept}`) return new Response("{}", { status: 401 });
    if (new URL(req.url).pathname.endsWith("/configmaps")) {
      return Response.json({ metadata: { resourceVersion: "5" }, items: [{ auth }] });
    }
    return Response.json({ auth, ua: req.headers.get("User-Agent") });
  });
  const port = (server.addr as Deno.NetAddr).port;
  const client = new KubeClient(
    { server: `http://127.0.0.1:${port}`, namespace: "default", tokenFile },
    { userAgent: "test-agent/1", tokenRefreshMs: 3_600_000 },
  );
  try {
    assert.deepEqual(await client.request("GET", "/api"), {
      auth: "Bearer one",
      ua: "test-agent/1",
    });
    // The kubelet rotated the token and the old one is no longer accepted: the cached token is
    // still fresh by age, so only the 401 makes the client read the file again.
    await Deno.writeTextFile(tokenFile, "two\n");
    accept = "two";
    assert.deepEqual(await client.request("GET", "/api"), {
      auth: "Bearer two",
      ua: "test-agent/1",
    });
    // A streamed list takes the same path: one retry with the token read again.
    await Deno.writeTextFile(tokenFile, "three\n");
    accept = "three";
    const items: unknown[] = [];
    await client.listEach(ConfigMaps, (item) => items.push(item), { namespace: "ns" });
    assert.deepEqual(items, [{ auth: "Bearer three" }]);
    accept = "four";
    await assert.rejects(
      client.request("GET", "/api"),
      (e) => e instanceof ApiError && e.code === 401,
    );
    await assert.rejects(
      client.listEach(ConfigMaps, () => {}, { namespace: "ns" }),
      (e) => e instanceof ApiError && e.code === 401,
    );
  } finally {
    client.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
