// KubeClient reads the same answers over both of its transports (ClientOptions `transport`): a
// request, a list read item by item, a watch and its end on abort, a server path prefix, and an
// API error with the server's words. The manager's client takes --api-transport.
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { transportOf } from "../../runtime/client/transport/choice.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import { Logger } from "../../runtime/core/log.ts";
import { Manager } from "../../runtime/manager.ts";
import { parseOptions } from "../../controllers/minicluster/operator_flags.ts";
import { tokenKubeconfig } from "./token_kubeconfig.ts";

const cm = (name: string) => ({ metadata: { name, namespace: "default", resourceVersion: "1" } });

function server() {
  const paths: string[] = [];
  const s = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    paths.push(url.pathname + url.search);
    if (!url.pathname.startsWith("/prefix/")) return new Response("no prefix", { status: 500 });
    const path = url.pathname.slice("/prefix".length);
    if (path === "/api/v1/namespaces/default/configmaps/missing") {
      return Response.json({ kind: "Status", code: 404, reason: "NotFound", message: "no such" }, {
        status: 404,
      });
    }
    if (path.startsWith("/api/v1/namespaces/default/configmaps/")) return Response.json(cm("a"));
    if (url.searchParams.get("watch") === "true") {
      const lines = [{ type: "ADDED", object: cm("a") }, { type: "MODIFIED", object: cm("b") }];
      return new Response(
        new ReadableStream({
          start(c) {
            for (const l of lines) c.enqueue(new TextEncoder().encode(JSON.stringify(l) + "\n"));
            // and stays open, as a watch does
          },
        }),
      );
    }
    return Response.json({
      kind: "ConfigMapList",
      metadata: { resourceVersion: "7" },
      items: [cm("a"), cm("b"), cm("c")],
    });
  });
  return { url: `http://127.0.0.1:${s.addr.port}/prefix`, paths, close: () => s.shutdown() };
}

for (const transport of ["fetch", "http1"] as const) {
  Deno.test(`KubeClient over ${transport}: requests, lists, watches and errors`, async () => {
    const s = server();
    const client = new KubeClient({ server: s.url, namespace: "default" }, { transport });
    try {
      const got = await client.get<{ metadata: { name: string } }>(ConfigMaps, "default", "a");
      assert.equal(got.metadata.name, "a");
      const names: string[] = [];
      const meta = await client.listEach<{ metadata: { name: string } }>(
        ConfigMaps,
        (item) => names.push(item.metadata.name),
        { namespace: "default" },
      );
      assert.deepEqual([names, meta.resourceVersion], [["a", "b", "c"], "7"]);
      await assert.rejects(
        () => client.get(ConfigMaps, "default", "missing"),
        (e: Error) => /no such/.test(e.message),
      );
      const abort = new AbortController();
      const events: string[] = [];
      for await (
        const e of client.watch<{ metadata: { name: string } }>(ConfigMaps, {
          namespace: "default",
          signal: abort.signal,
        })
      ) {
        events.push(`${e.type} ${e.object.metadata.name}`);
        if (events.length === 2) setTimeout(() => abort.abort(), 10);
      }
      assert.deepEqual(events, ["ADDED a", "MODIFIED b"]);
      assert.ok(s.paths.every((p) => p.startsWith("/prefix/")), s.paths.join(" "));
    } finally {
      client.close();
      await s.close();
    }
  });
}

Deno.test("transportOf: HTTP/1.1 unless asked otherwise or TLS verification is off", () => {
  const conn = { server: "https://127.0.0.1:6443", namespace: "default" };
  assert.equal(transportOf(conn, "fetch"), "fetch");
  assert.equal(transportOf(conn, "http1"), "http1");
  assert.equal(transportOf({ ...conn, insecureSkipTLSVerify: true }), "fetch");
  assert.throws(
    () => transportOf({ ...conn, insecureSkipTLSVerify: true }, "http1"),
    /neither goes through a proxy nor skips TLS verification, which this kubeconfig's insecure-skip-tls-verify asks for: use transport auto or fetch/,
  );
  assert.equal(new KubeClient(conn, { transport: "fetch" }).transport, "fetch");
});

Deno.test("the manager's client takes --api-transport, and says which it uses", async () => {
  const kubeconfig = await tokenKubeconfig("https://127.0.0.1:6443");
  try {
    for (
      const [flags, transport] of [[[], "http1"], [["--api-transport=fetch"], "fetch"]] as const
    ) {
      const lines: string[] = [];
      const log = new Logger({ level: "info", format: "json", write: (l) => lines.push(l) });
      const manager = new Manager(parseOptions([`--kubeconfig=${kubeconfig.path}`, ...flags]), log);
      const client = await manager.connect();
      client.close();
      assert.equal(client.transport, transport);
      assert.ok(
        lines.some((l) =>
          l.includes('"msg":"API client"') && l.includes(`"transport":"${transport}"`)
        ),
        lines.join("\n"),
      );
    }
  } finally {
    await kubeconfig.remove();
  }
});
