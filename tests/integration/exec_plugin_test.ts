// An exec credential plugin against a real apiserver: a kubeconfig whose user runs a small plugin
// program that prints a ServiceAccount token. The plugin's first token is refused (401): the
// client runs it again and the request succeeds, as with a cloud plugin whose token expired early.

import assert from "node:assert/strict";
import { join } from "node:path";
import { KubeClient } from "../../runtime/client/client.ts";
import { Logger } from "../../runtime/core/log.ts";
import { Pods } from "../../runtime/client/resources.ts";
import { pluginRuns, processExists, writePlugin } from "../exec_plugin.ts";
import { eventually, integrationTest, kubectl, withTimeout } from "../harness.ts";
import { execUser, kubeconfigAs } from "./identity.ts";

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
      // The first run prints a token the apiserver does not know; every later run the real one.
      const plugin = await writePlugin(dir, [
        `if [ "$(wc -l < "${dir}/pids")" -eq 1 ]; then t=not-a-token; else t=$(cat "${dir}/token"); fi`,
        `printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$t"`,
      ]);
      const kubeconfig = await kubeconfigAs(env, dir, execUser(plugin));
      const client = await KubeClient.fromKubeconfig(kubeconfig);
      try {
        const pods = await client.list(Pods, { namespace: env.namespace });
        assert.deepEqual(pods.items, []);
        await client.list(Pods, { namespace: env.namespace });
      } finally {
        client.close();
      }
      // One refused run, one good one, and the good token was then reused.
      assert.equal((await pluginRuns(dir)).length, 2);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

integrationTest(
  "exec plugin: one that hangs is killed at the timeout and the request fails naming it",
  async (env) => {
    const dir = await Deno.makeTempDir({ prefix: "exec-plugin-hang-" });
    try {
      const plugin = await writePlugin(dir, ["exec sleep 600"]);
      const kubeconfig = await kubeconfigAs(env, dir, execUser(plugin));
      const logs: string[] = [];
      // Declared aside: a client without the bound takes (and ignores) the same object.
      const options = {
        timeoutMs: 20_000,
        execPluginTimeoutMs: 1_000,
        log: new Logger({ level: "debug", write: (l) => logs.push(l) }),
      };
      const client = await KubeClient.fromKubeconfig(kubeconfig, undefined, options);
      try {
        const started = Date.now();
        await withTimeout(
          assert.rejects(
            client.list(Pods, { namespace: env.namespace }),
            (e: Error) => {
              assert.match(e.message, new RegExp(`exec plugin ${plugin}.* did not finish in 1 s`));
              return true;
            },
          ),
          10_000,
          "the request while the plugin hangs",
        );
        assert.ok(Date.now() - started < 10_000);
        // Killed, not left behind; and said so in the log, with its command and the timeout.
        const [pid] = await pluginRuns(dir);
        assert.ok(pid > 0, "the plugin ran");
        await eventually(() => assert.ok(!processExists(pid), `plugin ${pid} still runs`));
        const line = logs.find((l) => l.includes("exec credential plugin failed"));
        assert.ok(line, logs.join("\n"));
        assert.equal(JSON.parse(line).command, plugin);
        assert.equal(JSON.parse(line).timeoutMs, 1_000);
      } finally {
        client.close();
      }
    } finally {
      for (const pid of await pluginRuns(dir)) if (processExists(pid)) Deno.kill(pid, "SIGKILL");
      await Deno.remove(dir, { recursive: true });
    }
  },
);
