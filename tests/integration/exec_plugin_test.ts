// An exec credential plugin against a real apiserver: a kubeconfig whose user runs a small plugin
// program that prints a ServiceAccount token. The plugin's first token is refused (401): the
// client runs it again and the request succeeds, as with a cloud plugin whose token expired early.

import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { KubeClient } from "../../runtime/client.ts";
import { Pods } from "../../runtime/resources.ts";
import { integrationTest, kubectl } from "../harness.ts";

integrationTest(
  "exec plugin: the token it prints authenticates; after a 401 it runs again",
  async (env) => {
    await kubectl(env, "create", "serviceaccount", "reader");
    await kubectl(env, "create", "role", "reader", "--verb=list", "--resource=pods");
    await kubectl(
      env,
      "create",
      "rolebinding",
      "reader",
      "--role=reader",
      `--serviceaccount=${env.namespace}:reader`,
    );
    const token = (await kubectl(env, "create", "token", "reader")).trim();
    const dir = await Deno.makeTempDir({ prefix: "exec-plugin-it-" });
    try {
      await Deno.writeTextFile(join(dir, "token"), token);
      const plugin = join(dir, "plugin.sh");
      // The first run prints a token the apiserver does not know; every later run the real one.
      await Deno.writeTextFile(
        plugin,
        [
          "#!/bin/sh",
          `echo run >> "${dir}/runs"`,
          `if [ "$(wc -l < "${dir}/runs")" -eq 1 ]; then t=not-a-token; else t=$(cat "${dir}/token"); fi`,
          `printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$t"`,
        ].join("\n"),
      );
      await Deno.chmod(plugin, 0o755);
      const admin = parse(await Deno.readTextFile(env.kubeconfig));
      const kubeconfig = join(dir, "kubeconfig");
      await Deno.writeTextFile(
        kubeconfig,
        JSON.stringify({
          "current-context": "plugin",
          clusters: admin.clusters,
          users: [{
            name: "plugin",
            user: { exec: { apiVersion: "client.authentication.k8s.io/v1", command: plugin } },
          }],
          contexts: [{
            name: "plugin",
            context: { cluster: admin.clusters[0].name, user: "plugin", namespace: env.namespace },
          }],
        }),
      );
      const client = await KubeClient.fromKubeconfig(kubeconfig);
      try {
        const pods = await client.list(Pods, { namespace: env.namespace });
        assert.deepEqual(pods.items, []);
        await client.list(Pods, { namespace: env.namespace });
      } finally {
        client.close();
      }
      // One refused run, one good one, and the good token was then reused.
      const runs = (await Deno.readTextFile(join(dir, "runs"))).trim().split("\n").length;
      assert.equal(runs, 2);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
