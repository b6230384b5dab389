/**
 * The watcher against real kube-apiservers.
 *
 * The restart case needs an apiserver it may stop, so it starts a control plane of its own (one
 * etcd, two kube-apiservers on it, with hack/cluster's functions) instead of disturbing the shared
 * one: the watcher talks to apiserver 1, the test writes through apiserver 2. Stopping apiserver 1
 * cuts the watch; the writes made meanwhile (a create, an update, a delete) must all reach the
 * store once apiserver 1 is back. Its fresh watch cache starts after the watcher's last
 * resourceVersion, so the resume is answered with 410 Gone and the watcher must relist; the delete
 * then reaches listeners as a "deleted" event computed from the relist.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { ConfigMap, Secret } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { loadKubeconfig } from "../../runtime/config/kubeconfig.ts";
import {
  ConfigMaps,
  Namespaces,
  resourceType,
  Secrets,
  ServiceAccounts,
} from "../../runtime/client/resources.ts";
import { Watcher, WatcherError } from "../../runtime/watch/watcher.ts";
import type { RestartReason } from "../../runtime/watch/watch_step.ts";
import { apiserverArgs, type ComponentContext } from "../../hack/cluster/components.ts";
import { renderKubeconfig } from "../../hack/cluster/kubeconfig.ts";
import { componentContext, down, up } from "../../hack/cluster/lifecycle.ts";
import { freeLoopbackPort } from "../../hack/cluster/ports.ts";
import { spawnDaemon, stopGroups } from "../../hack/cluster/processes.ts";
import { ClusterPaths, readState, writeState } from "../../hack/cluster/state.ts";
import { eventually, integrationTest } from "../harness.ts";

const LABEL = "runtime-test/watched";

/** etcd + two apiservers in a temporary directory; apiserver 1 can be stopped and restarted. */
class OwnControlPlane {
  private constructor(
    readonly dir: string,
    readonly kubeconfig1: string,
    readonly kubeconfig2: string,
    private readonly ctx1: ComponentContext,
    private readonly binary: string,
  ) {}

  /**
   * Starts it, trying again on a failed start: hack/cluster's liveness check can mistake the
   * `sh -c exec` shim for an exited apiserver on a loaded machine (reported to its owner).
   */
  static async start(attempts = 3): Promise<OwnControlPlane> {
    for (let i = 1;; i++) {
      try {
        return await OwnControlPlane.#startOnce();
      } catch (e) {
        if (i >= attempts) throw e;
        console.error(`own control plane: start ${i} failed, retrying: ${(e as Error).message}`);
      }
    }
  }

  static async #startOnce(): Promise<OwnControlPlane> {
    const dir = await Deno.makeTempDir({ prefix: "runtime-watcher-" });
    try {
      const kubeconfig1 = await up({ dir, mode: "control-plane-only", nodes: 0 });
      const paths = new ClusterPaths(dir);
      const state = (await readState(paths))!;
      const ctx1 = componentContext(paths, state);
      const port2 = freeLoopbackPort();
      const binary = join(state.binDir, "kube-apiserver");
      // Not recorded in state.json (one pid per component), but `down` also stops every daemon
      // whose command line mentions the directory, which this one's certificates do.
      spawnDaemon({
        binary,
        args: apiserverArgs({ ...ctx1, ports: { ...state.ports, apiserver: port2 } }),
        logFile: join(paths.logs, "kube-apiserver-2.log"),
        cwd: dir,
      });
      const read = (p: string) => Deno.readTextFile(p);
      const kubeconfig2 = join(dir, "kubeconfig-2");
      await Deno.writeTextFile(
        kubeconfig2,
        renderKubeconfig({
          server: `https://127.0.0.1:${port2}`,
          caCertPem: await read(ctx1.pki.caCert),
          clientCertPem: await read(ctx1.pki.adminCert),
          clientKeyPem: await read(ctx1.pki.adminKey),
        }),
      );
      const plane = new OwnControlPlane(dir, kubeconfig1, kubeconfig2, ctx1, binary);
      await plane.waitReady(kubeconfig2);
      return plane;
    } catch (e) {
      await down(dir, { quiet: true });
      throw e;
    }
  }

  async waitReady(kubeconfig: string): Promise<void> {
    const client = await KubeClient.fromKubeconfig(kubeconfig);
    try {
      await eventually(() => client.list(Namespaces, { limit: 1 }), {
        timeoutMs: 60_000,
        intervalMs: 250,
      });
    } finally {
      client.close();
    }
  }

  async stopApiserver1(): Promise<void> {
    const paths = new ClusterPaths(this.dir);
    const state = (await readState(paths))!;
    await stopGroups([state.pids["kube-apiserver"]!]);
  }

  async startApiserver1(): Promise<void> {
    const paths = new ClusterPaths(this.dir);
    const state = (await readState(paths))!;
    state.pids["kube-apiserver"] = spawnDaemon({
      binary: this.binary,
      args: apiserverArgs(this.ctx1),
      logFile: paths.log("kube-apiserver"),
      cwd: this.dir,
    });
    await writeState(paths, state);
    await this.waitReady(this.kubeconfig1);
  }

  async stop(): Promise<void> {
    await down(this.dir, { quiet: true });
  }
}

function labelled(namespace: string, name: string, value: string): ConfigMap {
  return { metadata: { name, namespace, labels: { [LABEL]: "true" } }, data: { value } };
}

/** name → data.value of every object in the store. */
function contents(watcher: Watcher<ConfigMap>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const cm of watcher.store.list()) out[cm.metadata!.name!] = cm.data?.value;
  return out;
}

Deno.test({
  name: "watcher: every change arrives, across an apiserver restart and a 410 relist",
  async fn() {
    const plane = await OwnControlPlane.start();
    const writer = await KubeClient.fromKubeconfig(plane.kubeconfig2);
    const reader = await KubeClient.fromKubeconfig(plane.kubeconfig1);
    const restarts: RestartReason[] = [];
    let relists = 0;
    const watcher = new Watcher<ConfigMap>(reader, ConfigMaps, {
      namespaces: ["w"],
      labelSelector: `${LABEL}=true`,
      backoff: { initialMs: 200, maxMs: 1000, jitter: 0.2 },
      metrics: {
        restarted: (_r, reason) => restarts.push(reason),
        relisted: () => relists++,
        event: () => {},
      },
    });
    try {
      await writer.create(Namespaces, { metadata: { name: "w" } });
      const ns = "w";
      for (const name of ["a", "b", "c"]) {
        await writer.create(ConfigMaps, labelled(ns, name, "1"));
      }
      await writer.create(ConfigMaps, { metadata: { name: "unlabelled", namespace: ns } });

      const events: string[] = [];
      watcher.store.subscribe((e) => events.push(`${e.type} ${e.object.metadata!.name}`));
      watcher.start();
      await watcher.synced;
      assert.deepEqual(contents(watcher), { a: "1", b: "1", c: "1" });

      // Every change of a live watch arrives, in order, none coalesced.
      await writer.create(ConfigMaps, labelled(ns, "e", "0"));
      for (let i = 1; i <= 5; i++) {
        await writer.patch(ConfigMaps, ns, "e", { data: { value: String(i) } }, "merge");
      }
      await writer.delete(ConfigMaps, ns, "e");
      await eventually(() => assert.ok(events.includes("deleted e")), { timeoutMs: 10_000 });
      assert.deepEqual(events.filter((e) => e.endsWith(" e")), [
        "added e",
        "updated e",
        "updated e",
        "updated e",
        "updated e",
        "updated e",
        "deleted e",
      ]);
      events.length = 0;

      // Cut the watch: apiserver 1 goes away; writes continue through apiserver 2.
      await plane.stopApiserver1();
      await writer.create(ConfigMaps, labelled(ns, "d", "1"));
      await writer.patch(ConfigMaps, ns, "b", { data: { value: "2" } }, "merge");
      await writer.delete(ConfigMaps, ns, "c");
      await writer.create(Secrets, { metadata: { name: "bump", namespace: ns } } as Secret);
      // The watcher keeps retrying (with backoff) while the apiserver is down.
      await new Promise((r) => setTimeout(r, 1500));
      assert.ok(restarts.filter((r) => r === "error" || r === "closed").length >= 1, `${restarts}`);
      await plane.startApiserver1();

      await eventually(() => {
        assert.deepEqual(contents(watcher), { a: "1", b: "2", d: "1" });
      }, { timeoutMs: 30_000, intervalMs: 100 });
      assert.deepEqual(events.sort(), ["added d", "deleted c", "updated b"]);
      assert.ok(restarts.includes("gone"), `expected a 410 relist, got restarts ${restarts}`);
      assert.ok(relists >= 2, `relists: ${relists}`);

      // And the watch keeps working after the relist.
      await writer.patch(ConfigMaps, ns, "a", { data: { value: "3" } }, "merge");
      await eventually(() => assert.equal(contents(watcher).a, "3"), { timeoutMs: 10_000 });
    } finally {
      await watcher.stop();
      reader.close();
      writer.close();
      await plane.stop();
    }
  },
});

integrationTest(
  "watcher: a forbidden list stops at start-up by default, or retries forever when asked",
  async ({ client, namespace, kubeconfig }) => {
    // A ServiceAccount with no RBAC at all: every list is 403.
    await client.create(ServiceAccounts, { metadata: { name: "nobody", namespace } });
    const token = await client.request<{ status: { token: string } }>(
      "POST",
      `/api/v1/namespaces/${namespace}/serviceaccounts/nobody/token`,
      { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: {} },
    );
    const { server, caCerts } = await loadKubeconfig(kubeconfig);
    const nobody = new KubeClient({ server, caCerts, token: token.status.token, namespace });
    try {
      const strict = new Watcher<ConfigMap>(nobody, ConfigMaps, { namespaces: [namespace] });
      strict.start();
      await assert.rejects(strict.synced, WatcherError);
      await strict.stop();

      const restarts: RestartReason[] = [];
      const patient = new Watcher<ConfigMap>(nobody, ConfigMaps, {
        namespaces: [namespace],
        stopOnForbidden: false,
        backoff: { initialMs: 50, maxMs: 100 },
        metrics: { restarted: (_r, why) => restarts.push(why), relisted() {}, event() {} },
      });
      patient.start();
      await eventually(() => assert.ok(restarts.length >= 3), { timeoutMs: 10_000 });
      assert.equal(patient.store.hasSynced, false);
      await patient.stop();
    } finally {
      nobody.close();
    }
  },
);

integrationTest(
  "watcher: a kind the apiserver does not serve stops at start-up, naming the CRD file to apply",
  async ({ client, namespace }) => {
    // The operator's own kind under a group no CRD defines: the apiserver answers the list 404,
    // as it does for a MiniClusterWorkspace when only crds/minicluster.yaml was applied.
    const missing = resourceType(
      "not-installed.flux-framework.org",
      "v1alpha2",
      "miniclusterworkspaces",
      "MiniClusterWorkspace",
      true,
      "crds/miniclusterworkspace.yaml",
    );
    const watcher = new Watcher(client, missing, {
      namespaces: [namespace],
      backoff: { initialMs: 50, maxMs: 100 },
    });
    const t0 = performance.now();
    watcher.start();
    try {
      await assert.rejects(watcher.synced, (e: Error) => {
        assert.ok(e instanceof WatcherError);
        assert.match(
          e.message,
          /does not serve miniclusterworkspaces\.not-installed\.flux-framework\.org\/v1alpha2/,
        );
        assert.match(e.message, /apply crds\/miniclusterworkspace\.yaml/);
        return true;
      });
      // At once, not after retries until a sync timeout.
      assert.ok(performance.now() - t0 < 5_000, `${performance.now() - t0} ms`);
    } finally {
      await watcher.stop();
    }
  },
);
