/**
 * Watcher.stop() ends promptly whatever its streams are doing: waiting for a slow list, or in the
 * middle of a busy watch stream (the bench's observer once waited more than 15 s for a stop after
 * 1,000 MiniClusters). The fault proxy holds lists back as a loaded apiserver would.
 */
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import { Watcher } from "../../runtime/watch/watcher.ts";
import { FaultProxy } from "../faults/proxy.ts";
import { integrationTest } from "../harness.ts";

async function timed(p: Promise<unknown>): Promise<number> {
  const t = performance.now();
  await p;
  return performance.now() - t;
}

integrationTest("watcher: stop() during a list the apiserver is slow to answer", async (env) => {
  const proxy = await FaultProxy.start({ kubeconfig: env.kubeconfig });
  const client = await KubeClient.fromKubeconfig(await proxy.writeKubeconfig());
  try {
    proxy.rules.push((req) => req.list ? { kind: "delay", ms: 20_000 } : undefined);
    const w = new Watcher(client, ConfigMaps, { namespaces: [env.namespace] });
    w.start();
    await new Promise((r) => setTimeout(r, 300));
    const ms = await timed(w.stop());
    assert.ok(ms < 5_000, `stop took ${ms.toFixed(0)} ms`);
    assert.equal(w.store.hasSynced, false);
  } finally {
    client.close();
    await proxy.close();
  }
});

integrationTest("watcher: stop() while the watch stream is busy", async (env) => {
  const client = await KubeClient.fromKubeconfig(env.kubeconfig);
  const writer = await KubeClient.fromKubeconfig(env.kubeconfig);
  const w = new Watcher(client, ConfigMaps, { namespaces: [env.namespace] });
  let writing = true;
  const writes = (async () => {
    for (let i = 0; writing; i++) {
      await writer.apply(ConfigMaps, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `busy-${i % 20}`, namespace: env.namespace },
        data: { i: String(i) },
      }, { fieldManager: "watcher-stop-test", force: true });
    }
  })();
  try {
    w.start();
    await w.synced;
    await new Promise((r) => setTimeout(r, 1_000));
    assert.ok(w.store.size > 0);
    const ms = await timed(w.stop());
    assert.ok(ms < 5_000, `stop took ${ms.toFixed(0)} ms`);
  } finally {
    writing = false;
    await writes;
    client.close();
    writer.close();
  }
});
