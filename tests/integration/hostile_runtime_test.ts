/**
 * A hostile environment for the runtime (issue 27, defects 7 and 12), the operator's manager run
 * in-process as mod.ts wires it, under credentials that go bad:
 *
 * - the namespaced install (`--namespaces=a,b,c`, a RoleBinding per namespace): a namespace
 *   deleted (its RoleBinding with it) before the start and one deleted while running stop only
 *   themselves; the others are served, and the first is served without a restart once it is back;
 * - an exec credential plugin that hangs: killed at its timeout, logged, readiness fails, and a stop
 *   does not wait for it.
 *
 * A control-plane-only cluster has no namespace controller, so the test does its part of a
 * namespace's deletion: the namespace is marked deleted and its RoleBinding goes.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { PolicyRule } from "kubernetes-types/rbac/v1.d.ts";
import { parse } from "yaml";
import { MiniClusters } from "../../api/resource.ts";
import { jobName } from "../../controllers/minicluster/children/names.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import {
  Jobs,
  Namespaces,
  type ResourceType,
  ServiceAccounts,
} from "../../runtime/client/resources.ts";
import { pluginRuns, processExists, writePlugin } from "../exec_plugin.ts";
import { eventually, integrationTest, type TestEnv } from "../harness.ts";
import {
  ClusterRoles,
  execUser,
  kubeconfigAs,
  RoleBindings,
  serviceAccountToken,
} from "./identity.ts";
import { runManager, type RunningManager } from "./in_process_manager.ts";
import { miniCluster } from "./minicluster_operator.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

const SA = "minicluster-operator";

/** The shipped ClusterRole's rules (deploy/cluster-role.yaml). */
function shippedRules(): PolicyRule[] {
  return parse(Deno.readTextFileSync(`${ROOT}deploy/cluster-role.yaml`)).rules;
}

/**
 * Binds `clusterRole` to the operator's ServiceAccount in `namespace`, as the namespaced install
 * does.
 */
async function bindIn(env: TestEnv, namespace: string, clusterRole: string): Promise<void> {
  await env.client.create(RoleBindings, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "minicluster-operator", namespace },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole },
    subjects: [{ kind: "ServiceAccount", name: SA, namespace: env.namespace }],
  });
}

/** The lines of the not-served gauge that name `namespace`. */
function notServed(op: RunningManager, namespace: string): string[] {
  return op.metrics().filter((l) =>
    l.startsWith("watch_namespace_not_served{") && l.includes(`namespace="${namespace}"`) &&
    !l.endsWith(" 0")
  );
}

async function deleteQuietly(
  env: TestEnv,
  rt: ResourceType,
  namespace: string | undefined,
  name: string,
) {
  await env.client.delete(rt, namespace, name).catch((e) => {
    if (!isNotFound(e)) throw e;
  });
}

integrationTest(
  "hostile runtime: a namespace deleted under the namespaced install stops only itself",
  async (env) => {
    const { client, namespace } = env;
    const kept = `${namespace}-a`;
    const gone = `${namespace}-b`;
    const clusterRole = `minicluster-operator-test-${namespace}`;
    const dir = await Deno.makeTempDir({ prefix: "hostile-runtime-" });
    let op: RunningManager | undefined;
    try {
      await client.create(ServiceAccounts, { metadata: { name: SA, namespace } });
      await client.create(ClusterRoles, {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: clusterRole },
        rules: shippedRules(),
      });
      await client.create(Namespaces, { metadata: { name: kept } });
      await bindIn(env, namespace, clusterRole);
      await bindIn(env, kept, clusterRole);
      // `gone` was deleted before the start: no namespace, no RoleBinding, every list is a 403.
      const kubeconfig = await kubeconfigAs(env, dir, {
        token: await serviceAccountToken(env, SA),
      });
      op = await runManager(kubeconfig, [
        `--namespaces=${namespace},${kept},${gone}`,
        "--cache-sync-timeout=20s",
        "--leader-election-identity=hostile-runtime-test",
      ]);
      const o = op;
      const failure = () => `operator log:\n${o.logs.join("\n")}`;

      // Ready without the missing namespace, and says which one it does not serve, and why.
      await eventually(async () => {
        if (!o.running()) assert.fail(`the operator exited with ${await o.exit}\n${failure()}`);
        assert.equal(await o.readyz(), 200);
      }, { timeoutMs: 20_000, intervalMs: 200 });
      assert.ok(notServed(o, gone).some((l) => l.includes('reason="Forbidden"')), failure());
      assert.deepEqual(notServed(o, kept), []);
      assert.ok(
        o.logs.some((l) => l.includes("namespace not served") && l.includes(gone)),
        failure(),
      );

      // The other namespaces are served.
      for (const ns of [namespace, kept]) {
        const mc = miniCluster("served", ns, { size: 1 });
        await client.create(MiniClusters, mc);
        await eventually(() => client.get<Job>(Jobs, ns, jobName(mc)), { timeoutMs: 20_000 });
      }

      // `kept` is deleted under the running operator: the others go on.
      await deleteQuietly(env, RoleBindings, kept, "minicluster-operator");
      await client.delete(Namespaces, undefined, kept);
      const after = miniCluster("after", namespace, { size: 1 });
      await client.create(MiniClusters, after);
      await eventually(() => client.get<Job>(Jobs, namespace, jobName(after)), {
        timeoutMs: 20_000,
      });
      assert.ok(o.running(), failure());

      // `gone` comes back with its RoleBinding: served without a restart.
      await client.create(Namespaces, { metadata: { name: gone } });
      await bindIn(env, gone, clusterRole);
      const back = miniCluster("back", gone, { size: 1 });
      await client.create(MiniClusters, back);
      await eventually(() => client.get<Job>(Jobs, gone, jobName(back)), {
        timeoutMs: 60_000,
        intervalMs: 500,
      });
      // Each kind's stream retries on its own backoff (capped at 30 s, with jitter).
      await eventually(() => assert.deepEqual(notServed(o, gone), []), { timeoutMs: 40_000 });
      assert.equal(await o.readyz(), 200);
      assert.ok(o.running(), failure());
      assert.equal(await o.stop(), 0, "a clean shutdown");
    } finally {
      if (op?.running()) await op.stop();
      await deleteQuietly(env, Namespaces, undefined, gone);
      await deleteQuietly(env, Namespaces, undefined, kept);
      await deleteQuietly(env, ClusterRoles, undefined, clusterRole);
      await Deno.remove(dir, { recursive: true });
    }
  },
  { timeoutMs: 150_000 },
);

integrationTest(
  "hostile runtime: a credential plugin that hangs fails readiness and does not hold up a stop",
  async (env) => {
    const { client, namespace } = env;
    const dir = await Deno.makeTempDir({ prefix: "hostile-runtime-" });
    let op: RunningManager | undefined;
    try {
      await client.create(ServiceAccounts, { metadata: { name: SA, namespace } });
      await bindIn(env, namespace, "cluster-admin");
      await Deno.writeTextFile(`${dir}/token`, await serviceAccountToken(env, SA));
      // The first run's token is stale 2 s later (12 s, less the 10 s margin); every later run
      // hangs, as a cloud plugin does whose identity endpoint stopped answering.
      const plugin = await writePlugin(dir, [
        `if [ "$(wc -l < "${dir}/pids")" -gt 1 ]; then exec sleep 600; fi`,
        `exp=$(date -u -d "+12 seconds" +%Y-%m-%dT%H:%M:%SZ)`,
        `printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",` +
        `"status":{"token":"%s","expirationTimestamp":"%s"}}' "$(cat "${dir}/token")" "$exp"`,
      ]);
      const kubeconfig = await kubeconfigAs(env, dir, execUser(plugin));
      // Through the environment: a build without the option runs and ignores it.
      op = await runManager(kubeconfig, [
        `--namespaces=${namespace}`,
        "--leader-election-identity=hostile-runtime-test",
      ], {
        OPERATOR_EXEC_PLUGIN_TIMEOUT: "2s",
      });
      const o = op;
      const failure = () => `operator log:\n${o.logs.join("\n")}`;
      await eventually(async () => assert.equal(await o.readyz(), 200), { timeoutMs: 20_000 });
      await new Promise((r) => setTimeout(r, 3_000));

      // A reconcile needs a fresh token: the plugin hangs, is killed, and the operator says so.
      const mc = miniCluster("stalled", namespace, { size: 1 });
      await client.create(MiniClusters, mc);
      await eventually(async () => assert.equal(await o.readyz(), 503), {
        timeoutMs: 20_000,
        intervalMs: 200,
      }).catch((e) => assert.fail(`${e.message}\n${failure()}`));
      const line = o.logs.find((l) => l.includes("exec credential plugin failed"));
      assert.ok(line, failure());
      assert.equal(JSON.parse(line).command, plugin);
      assert.equal(JSON.parse(line).timeoutMs, 2_000);
      const [, hung] = await pluginRuns(dir);
      await eventually(() => assert.ok(!processExists(hung), `plugin ${hung} still runs`), {
        timeoutMs: 5_000,
      });
      assert.ok(o.running(), failure());

      // A stop aborts the plugin that runs now instead of waiting for it (or the drain deadline).
      const stopping = Date.now();
      assert.equal(await o.stop(), 0, "a clean shutdown");
      const stopMs = Date.now() - stopping;
      assert.ok(stopMs < 10_000, `the stop took ${stopMs} ms\n${failure()}`);
      // Killed by the stop (reaped a moment later).
      await eventually(async () => {
        for (const pid of await pluginRuns(dir)) {
          assert.ok(!processExists(pid), `plugin ${pid} outlived the stop`);
        }
      }, { timeoutMs: 5_000 });
    } finally {
      if (op?.running()) await op.stop();
      for (const pid of await pluginRuns(dir)) if (processExists(pid)) Deno.kill(pid, "SIGKILL");
      await deleteQuietly(env, RoleBindings, namespace, "minicluster-operator");
      await Deno.remove(dir, { recursive: true });
    }
  },
  { timeoutMs: 120_000 },
);
