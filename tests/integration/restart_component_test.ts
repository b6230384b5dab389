/**
 * `restartComponent` on a full cluster of its own (etcd, kube-apiserver, the controllers and one
 * KWOK node in a temporary directory): KWOK is stopped and started afresh, and the new process
 * makes pods Running as the old one did. The benchmark relies on this to give every run a KWOK
 * that has not seen the previous runs' pods.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { Pods } from "../../runtime/client/resources.ts";
import { down, restartComponent, up } from "../../hack/cluster/lifecycle.ts";
import { fakeNodeName } from "../../hack/cluster/nodes.ts";
import { isRunning } from "../../hack/cluster/processes.ts";
import { ClusterPaths, readState } from "../../hack/cluster/state.ts";
import { eventually } from "../harness.ts";

function pod(name: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: { nodeName: fakeNodeName(0), containers: [{ name: "c", image: "none" }] },
  };
}

async function waitRunning(client: KubeClient, name: string): Promise<void> {
  await eventually(async () => {
    const p = await client.get<Pod>(Pods, "default", name);
    assert.equal(p.status?.phase, "Running", `${name} is ${p.status?.phase}`);
  }, { timeoutMs: 60_000, intervalMs: 200 });
}

Deno.test("restartComponent: KWOK stopped and started afresh; the new one runs pods", async () => {
  const dir = await Deno.makeTempDir({ prefix: "restart-component-" });
  try {
    const kubeconfig = await up({ dir, mode: "full", nodes: 1 });
    const client = await KubeClient.fromKubeconfig(kubeconfig);
    try {
      await client.create(Pods, pod("before"));
      await waitRunning(client, "before");
      const paths = new ClusterPaths(dir);
      const old = (await readState(paths))!;
      const oldPid = old.pids.kwok!;
      const binary = `${old.binDir}/kwok`;

      await restartComponent(dir, "kwok");

      const now = (await readState(paths))!;
      assert.notEqual(now.pids.kwok, oldPid, "a new KWOK process");
      assert.ok(isRunning(now.pids.kwok!, binary), "the new KWOK runs");
      assert.ok(!isRunning(oldPid, binary), "the old KWOK is gone");
      assert.equal(now.pids["kube-apiserver"], old.pids["kube-apiserver"], "the apiserver kept");
      await client.create(Pods, pod("after"));
      await waitRunning(client, "after");
      await assert.rejects(restartComponent(dir, "etcd"), /not restarted alone/);
    } finally {
      client.close();
    }
  } finally {
    await down(dir, { quiet: true });
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
