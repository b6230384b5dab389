// A kubeconfig's tls-server-name, proxy-url and impersonation against the real API server (the
// unit tier has them against servers of its own: tests/unit/kubeconfig_connection_test.ts): the
// serving certificate checked against the name given, the admin's client certificate still sent
// with it; a watch and requests through an HTTP CONNECT proxy; requests made as the user
// impersonated, with that user's rights.
import assert from "node:assert/strict";
import { isForbidden, KubeClient } from "../../runtime/client/client.ts";
import { loadKubeconfig } from "../../runtime/config/kubeconfig.ts";
import { ConfigMaps, Namespaces } from "../../runtime/client/resources.ts";
import { integrationTest } from "../harness.ts";

integrationTest(
  "kubeconfig: tls-server-name is the name the API server's certificate is checked against",
  async (env) => {
    const conn = await loadKubeconfig(env.kubeconfig);
    assert.ok(conn.clientCert, "the admin authenticates by client certificate");
    const named = new KubeClient({ ...conn, tlsServerName: "kubernetes.default.svc" });
    const elsewhere = new KubeClient({ ...conn, tlsServerName: "elsewhere.example" });
    try {
      assert.equal(named.transport, "http1");
      // Authenticated as the admin: the client certificate goes with the name.
      const ns = await named.get<{ metadata: { name: string } }>(
        Namespaces,
        undefined,
        env.namespace,
      );
      assert.equal(ns.metadata.name, env.namespace);
      await assert.rejects(
        () => elsewhere.get(Namespaces, undefined, env.namespace),
        /not valid for name "elsewhere\.example"/,
      );
    } finally {
      named.close();
      elsewhere.close();
    }
  },
);

integrationTest("kubeconfig: an impersonated user's requests are that user's", async (env) => {
  const conn = await loadKubeconfig(env.kubeconfig);
  const user = `system:serviceaccount:${env.namespace}:nobody`;
  for (const transport of ["http1", "fetch"] as const) {
    const client = new KubeClient({
      ...conn,
      impersonate: { user, groups: ["system:serviceaccounts"], extra: {} },
    }, { transport });
    try {
      await assert.rejects(
        () => client.list(ConfigMaps, { namespace: env.namespace }),
        (e: Error) =>
          isForbidden(e) && e.message.includes(`User "${user}" cannot list resource "configmaps"`),
      );
    } finally {
      client.close();
    }
  }
  // Without impersonation the same client is the admin.
  const admin = new KubeClient(conn);
  try {
    await admin.list(ConfigMaps, { namespace: env.namespace });
  } finally {
    admin.close();
  }
});

/** An HTTP CONNECT proxy on loopback: tunnels each connection, and says where each one went. */
function connectProxy(): { url: string; tunnels: string[]; close: () => void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const tunnels: string[] = [];
  const open = new Set<Deno.Conn>();
  (async () => {
    for await (const conn of listener) {
      open.add(conn);
      (async () => {
        let head = "";
        const buf = new Uint8Array(4096);
        while (!head.includes("\r\n\r\n")) {
          const n = await conn.read(buf);
          if (n === null) return;
          head += new TextDecoder().decode(buf.subarray(0, n));
        }
        const [, target] = /^CONNECT (\S+) HTTP\/1\.1\r\n/.exec(head) ?? [];
        const [hostname, port] = target.split(":");
        tunnels.push(target);
        const upstream = await Deno.connect({ hostname, port: Number(port) });
        open.add(upstream);
        await conn.write(new TextEncoder().encode("HTTP/1.1 200 Connection established\r\n\r\n"));
        await Promise.allSettled([
          conn.readable.pipeTo(upstream.writable),
          upstream.readable.pipeTo(conn.writable),
        ]);
      })().catch(() => {});
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    tunnels,
    close: () => {
      listener.close();
      for (const c of open) {
        try {
          c.close();
        } catch {
          // already closed
        }
      }
    },
  };
}

integrationTest(
  "kubeconfig: proxy-url carries requests and watches to the API server",
  async (env) => {
    const conn = await loadKubeconfig(env.kubeconfig);
    const proxy = connectProxy();
    const client = new KubeClient({ ...conn, proxyUrl: proxy.url });
    const abort = new AbortController();
    try {
      assert.equal(client.transport, "fetch");
      await client.create(ConfigMaps, {
        metadata: { name: "via-proxy", namespace: env.namespace },
      });
      for await (
        const e of client.watch<{ metadata: { name: string } }>(ConfigMaps, {
          namespace: env.namespace,
          signal: abort.signal,
        })
      ) {
        if (e.object.metadata.name === "via-proxy") break;
      }
      const server = new URL(conn.server);
      assert.ok(proxy.tunnels.length >= 1);
      assert.ok(proxy.tunnels.every((t) => t === server.host), proxy.tunnels.join(" "));
    } finally {
      abort.abort();
      client.close();
      proxy.close();
    }
  },
);
