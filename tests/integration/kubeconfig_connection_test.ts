// A kubeconfig's tls-server-name and impersonation against the real API server (the unit tier
// has them against servers of its own: tests/unit/kubeconfig_connection_test.ts): the serving
// certificate checked against the name given, the admin's client certificate still sent with it;
// requests made as the user impersonated, with that user's rights.
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
