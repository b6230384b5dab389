// A running MiniCluster on a real node under disruption: its lead broker's pod killed, and the
// node's kubelet and containerd restarted. Both must converge, and what happened must show in the
// MiniCluster's conditions and in what Flux answers, never in the operator's own view alone.

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { up } from "../../hack/cluster/lifecycle.ts";
import { nodeRuntime } from "../../hack/cluster/real_nodes.ts";
import { describeProcess, isRunning } from "../../hack/cluster/processes.ts";
import { ClusterPaths } from "../../hack/cluster/state.ts";
import { realNodeName } from "../../hack/cluster/real_node_config.ts";
import { eventually } from "../harness.ts";
import {
  kubeconfigPath,
  kubectl,
  REAL_NAMESPACE,
  type RealEnv,
  realMiniCluster,
  realTest,
} from "./env.ts";

/** Each real-node daemon of the cluster in `dir`: its process now and its log's last lines. */
async function nodeDaemonsReport(dir: string): Promise<string> {
  const state = JSON.parse(await Deno.readTextFile(join(dir, "state.json")));
  const paths = new ClusterPaths(dir);
  const lines: string[] = [];
  for (const [key, pid] of Object.entries(state.real?.pids ?? {}) as [string, number][]) {
    const log = await Deno.readTextFile(paths.daemonLog(key)).catch(() => "");
    lines.push(`${key}: ${describeProcess(pid)}`, ...log.trimEnd().split("\n").slice(-15));
  }
  return lines.join("\n");
}

/** The pod of Job completion index `index`, once it is running (not a terminating one). */
async function runningPod(env: RealEnv, name: string, index: number): Promise<Pod> {
  return await eventually(async () => {
    const pod = (await env.pods(name)).find((p) =>
      p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] === `${index}` &&
      !p.metadata?.deletionTimestamp &&
      p.status?.containerStatuses?.some((c) => c.state?.running)
    );
    if (!pod) throw new Error(`${name}: index ${index} has no running pod`);
    return pod;
  }, { timeoutMs: 180_000, intervalMs: 500 });
}

async function ready(env: RealEnv, name: string): Promise<Condition> {
  return await eventually(async () => {
    const mc = await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name);
    const c = (mc.status?.conditions as Condition[] | undefined)?.find((c) => c.type === "Ready");
    if (c?.status !== "True") throw new Error(`${name}: Ready is ${JSON.stringify(c)}`);
    return c;
  }, { timeoutMs: 180_000, intervalMs: 1000 });
}

/**
 * Every broker joined, as the lead broker `pod` reports it, and the scheduler has both nodes free
 * (a broker is in the overlay a moment before its resources are up: a job asking for both nodes
 * in between is refused as unsatisfiable); then a job on both nodes.
 */
async function instanceWhole(env: RealEnv, name: string, pod: string): Promise<string> {
  await eventually(async () => {
    const out = await env.exec(
      pod,
      name,
      ["bash", "/mnt/flux/flux-connect.sh"],
      "flux overlay status --no-pretty; flux resource list --states=free --no-header -o '{nnodes}'\n",
    );
    if (!/^0 \S+: full$/m.test(out)) throw new Error(`not every broker joined:\n${out}`);
    if (!/^2$/m.test(out)) throw new Error(`not both nodes free:\n${out}`);
  }, { timeoutMs: 180_000, intervalMs: 2000 });
  return await env.exec(
    pod,
    name,
    ["bash", "/mnt/flux/flux-connect.sh"],
    "flux run -N2 --label-io hostname\n",
  );
}

realTest(
  "real: the lead broker's pod killed: its replacement leads and the follower joins it again",
  async (env) => {
    const name = "lead-killed";
    await env.apply(realMiniCluster(name, { size: 2, interactive: true }));
    const lead = await runningPod(env, name, 0);
    const follower = await runningPod(env, name, 1);
    await ready(env, name);
    await instanceWhole(env, name, lead.metadata!.name!);

    await kubectl(["-n", REAL_NAMESPACE, "delete", "pod", lead.metadata!.name!, "--wait=false"]);
    // The Job controller makes a new pod for index 0; the follower's broker loses its parent,
    // exits, and its entrypoint starts it again until it joins the new lead.
    const next = await eventually(async () => {
      const pod = await runningPod(env, name, 0);
      if (pod.metadata!.uid === lead.metadata!.uid) throw new Error("still the old lead");
      return pod;
    }, { timeoutMs: 180_000, intervalMs: 1000 });
    const ran = await instanceWhole(env, name, next.metadata!.name!);
    assert.match(ran, new RegExp(`^0: ${name}-0$`, "m"), ran);
    assert.match(ran, new RegExp(`^1: ${name}-1$`, "m"), ran);
    const still = await runningPod(env, name, 1);
    assert.equal(still.metadata!.uid, follower.metadata!.uid, "the follower's pod was kept");
    const c = await ready(env, name);
    assert.equal(c.reason, "PodsReady");
  },
  { timeoutMs: 500_000 },
);

realTest(
  "real: kubelet and containerd restarted under a running MiniCluster: the pods and Flux go on",
  async (env) => {
    const name = "node-restart";
    await env.apply(realMiniCluster(name, { size: 2, interactive: true }));
    const before = [await runningPod(env, name, 0), await runningPod(env, name, 1)];
    await ready(env, name);
    await instanceWhole(env, name, before[0].metadata!.name!);

    // Stop the node's daemons as a crash or an upgrade would, then start them as `up` does for
    // what is missing. The containers live on in their shims meanwhile.
    const dir = dirname(kubeconfigPath());
    const state = JSON.parse(await Deno.readTextFile(join(dir, "state.json")));
    const node = realNodeName(0);
    const daemons: [string, string][] = [
      [`kubelet/${node}`, join(state.binDir, "kubelet")],
      [`containerd/${node}`, nodeRuntime(state).containerd],
    ];
    for (const [key, binary] of daemons) {
      const pid = state.real.pids[key];
      assert.ok(isRunning(pid, binary), `${key} (pid ${pid}) runs before the restart`);
      Deno.kill(pid, "SIGTERM");
      await eventually(() => {
        if (isRunning(pid, binary)) throw new Error(`${key} still runs`);
      }, { timeoutMs: 30_000, intervalMs: 200 });
    }
    const restart = () =>
      up({ dir, mode: "full", nodes: state.nodes, realNodes: state.real.count });
    try {
      await restart();
    } catch (e) {
      // Say what the node's daemons are doing, then start again what is missing, so that the
      // scenarios after this one find a working node whatever went wrong here.
      const report = await nodeDaemonsReport(dir);
      await restart().catch((again) => console.error(`the node's second start failed: ${again}`));
      throw new Error(`${e instanceof Error ? e.message : e}\n${report}`);
    }

    const after = [await runningPod(env, name, 0), await runningPod(env, name, 1)];
    for (let i = 0; i < 2; i++) {
      assert.equal(after[i].metadata!.uid, before[i].metadata!.uid, `pod ${i} is the same pod`);
      const restarts = after[i].status?.containerStatuses?.reduce((n, c) => n + c.restartCount, 0);
      assert.equal(restarts, 0, `pod ${i}'s containers did not restart`);
    }
    const ran = await instanceWhole(env, name, after[0].metadata!.name!);
    assert.match(ran, new RegExp(`^1: ${name}-1$`, "m"), ran);
    const c = await ready(env, name);
    assert.equal(c.reason, "PodsReady");
  },
  { timeoutMs: 500_000 },
);
