// A kubeconfig's tls-server-name, proxy-url and impersonation, followed by KubeClient against
// servers of the test's own: the certificate checked against the name given (on HTTP/1.1, the
// transport that can), requests sent through the proxy (on fetch) with the URL's user as its basic
// auth, and the Impersonate-* headers client-go sends, on both transports.
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { transportOf } from "../../runtime/client/transport/choice.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import { makeServingCert } from "../../runtime/aggregated/serving_cert.ts";

const configMap = { metadata: { name: "a", namespace: "default", resourceVersion: "1" } };

Deno.test("tls-server-name: the certificate is checked against it, not the server's address", async () => {
  const cert = await makeServingCert(["api.internal"]);
  const s = Deno.serve(
    { port: 0, hostname: "127.0.0.1", cert: cert.certPem, key: cert.keyPem, onListen: () => {} },
    () => Response.json(configMap),
  );
  const conn = {
    server: `https://127.0.0.1:${s.addr.port}`,
    namespace: "default",
    caCerts: [cert.caPem],
  };
  const plain = new KubeClient(conn);
  const named = new KubeClient({ ...conn, tlsServerName: "api.internal" });
  try {
    await assert.rejects(
      () => plain.get(ConfigMaps, "default", "a"),
      /not valid for name "127\.0\.0\.1"/,
    );
    assert.equal(named.transport, "http1");
    assert.deepEqual(await named.get(ConfigMaps, "default", "a"), configMap);
  } finally {
    plain.close();
    named.close();
    await s.shutdown();
  }
});

Deno.test("proxy-url: requests go through the proxy, with the URL's user as basic auth", async () => {
  const api = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    () => Response.json(configMap),
  );
  const seen: { url: string; auth: string | null }[] = [];
  const proxy = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (req) => {
    seen.push({ url: req.url, auth: req.headers.get("proxy-authorization") });
    return fetch(req.url, { method: req.method, headers: { accept: "application/json" } });
  });
  const server = `http://127.0.0.1:${api.addr.port}`;
  const client = new KubeClient({
    server,
    namespace: "default",
    proxyUrl: `http://op%40x:p%3As@127.0.0.1:${proxy.addr.port}`,
  });
  try {
    assert.equal(client.transport, "fetch");
    assert.deepEqual(await client.get(ConfigMaps, "default", "a"), configMap);
    assert.deepEqual(seen, [{
      url: `${server}/api/v1/namespaces/default/configmaps/a`,
      auth: `Basic ${btoa("op@x:p:s")}`,
    }]);
  } finally {
    client.close();
    await proxy.shutdown();
    await api.shutdown();
  }
});

Deno.test("transportOf: what a kubeconfig needs decides, and a transport that lacks it is refused", () => {
  const conn = { server: "https://10.0.0.1:6443", namespace: "default" };
  const named = { ...conn, tlsServerName: "api.internal" };
  const proxied = { ...conn, proxyUrl: "http://proxy:3128" };
  assert.equal(transportOf(named), "http1");
  assert.equal(transportOf(proxied), "fetch");
  assert.throws(
    () => transportOf(named, "fetch"),
    /tls-server-name asks for: use transport auto or http1/,
  );
  assert.throws(() => transportOf(proxied, "http1"), /proxy-url asks for: use transport auto/);
  assert.throws(
    () => transportOf({ ...named, proxyUrl: "http://proxy:3128" }),
    /proxy-url needs the fetch transport and its tls-server-name the HTTP\/1\.1 one/,
  );
});

/** A server that answers one request with `{}` and gives the request's header lines. */
function oneRequestServer(): { server: string; head: Promise<string[]> } {
  const listener = Deno.listen({ port: 0, hostname: "127.0.0.1" });
  const head = (async () => {
    const conn = await listener.accept();
    let text = "";
    const buf = new Uint8Array(16_384);
    while (!text.includes("\r\n\r\n")) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    await conn.write(
      new TextEncoder().encode(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n" +
          "Connection: close\r\n\r\n{}",
      ),
    );
    conn.close();
    listener.close();
    return text.split("\r\n\r\n")[0].split("\r\n").slice(1);
  })();
  return { server: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`, head };
}

for (const transport of ["http1", "fetch"] as const) {
  Deno.test(`impersonation over ${transport}: a kubeconfig user's as, as-uid, as-groups and as-user-extra`, async () => {
    const s = oneRequestServer();
    const client = new KubeClient({
      server: s.server,
      namespace: "default",
      token: "t",
      impersonate: {
        user: "system:serviceaccount:ops:minicluster-operator",
        uid: "1234",
        groups: ["system:serviceaccounts", "ops"],
        extra: { "scopes.example.com/x y": ["a", "b"] },
      },
    }, { transport });
    try {
      await client.request("GET", "/api");
      const lines = (await s.head).map((l) => l.toLowerCase());
      assert.deepEqual(lines.filter((l) => l.startsWith("impersonate-")), [
        "impersonate-user: system:serviceaccount:ops:minicluster-operator",
        "impersonate-uid: 1234",
        "impersonate-group: system:serviceaccounts",
        "impersonate-group: ops",
        "impersonate-extra-scopes.example.com%2fx%20y: a",
        "impersonate-extra-scopes.example.com%2fx%20y: b",
      ]);
      assert.ok(lines.includes("authorization: bearer t"));
    } finally {
      client.close();
    }
  });
}
