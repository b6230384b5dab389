// Flux sees the pods' cores, not the node's: two brokers whose Flux containers have a CPU limit of
// one core share one real node; the instance must hold what Kubernetes granted them (read in each
// pod from its cgroup's CPU quota), not the node's cores twice, and refuse a job of more tasks.
// And Flux counts cores where Kubernetes counts hardware threads: on the same node described to
// hwloc as cores of two threads each, no broker is drained and a job of one task per hardware
// thread is refused.

import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { REAL_NODE_LABEL } from "../../hack/cluster/real_node_config.ts";
import { eventually } from "../harness.ts";
import { kubectl, type RealEnv, realMiniCluster, realTest } from "./env.ts";
import { CPU_QUOTA, quotaCpus, resourceRow, smtTopologyXml } from "./flux_resources.ts";

/** The pods of `name` by Job index, once `count` of them each have a container running. */
async function runningPods(env: RealEnv, name: string, count: number): Promise<Pod[]> {
  return await eventually(async () => {
    const pods = await env.pods(name);
    const running = pods.filter((p) => p.status?.containerStatuses?.some((c) => c.state?.running));
    if (running.length !== count) throw new Error(`${name}: ${running.length}/${count} running`);
    return running;
  }, { timeoutMs: 180_000, intervalMs: 500 });
}

/** The first real node's name, for both pods of a scenario, even when the cluster has several. */
async function firstRealNode(): Promise<string> {
  const nodes = await kubectl(["get", "nodes", "-l", `${REAL_NODE_LABEL}=true`, "-o", "name"]);
  const node = nodes.split("\n").find((n) => n.startsWith("node/"))?.slice("node/".length);
  assert.ok(node, `no real node:\n${nodes}`);
  return node;
}

/**
 * Two interactive brokers on `node` whose Flux containers have a limit of one core each. The
 * request is a little less, so that both pods fit beside the node's other pods (the operator,
 * CoreDNS) on a 2-core node: the brokers advertise the request in whole cores, at least one, so
 * one core each.
 */
function twoOneCoreBrokers(name: string, node: string, container: Record<string, unknown> = {}) {
  const mc = realMiniCluster(name, { size: 2, interactive: true }, {
    resources: { limits: { cpu: "1" }, requests: { cpu: "900m" } },
    ...container,
  });
  mc.spec.pod = {
    ...mc.spec.pod,
    nodeSelector: { ...mc.spec.pod?.nodeSelector, "kubernetes.io/hostname": node },
  };
  return mc;
}

realTest(
  "real: two brokers with a one-core CPU limit on one node advertise 2 cores and refuse a third task",
  async (env) => {
    const name = "cores";
    const node = await firstRealNode();
    await env.apply(twoOneCoreBrokers(name, node));
    const pods = await runningPods(env, name, 2);
    assert.deepEqual(pods.map((p) => p.spec?.nodeName), [node, node]);
    const [lead, follower] = pods.map((p) => p.metadata!.name!);

    // What Kubernetes granted, as each pod's cgroup enforces it.
    let granted = 0;
    for (const pod of [lead, follower]) {
      const quota = await env.exec(pod, name, ["sh", "-c", CPU_QUOTA]);
      const cpus = quotaCpus(quota);
      assert.equal(cpus, 1, `${pod}: CPU quota ${quota}`);
      granted += cpus!;
    }

    // Every broker wrote the same R, and the lead broker's instance holds the granted cores: both
    // ranks up (a rank whose own cores did not match R would be drained, not free).
    // The entrypoint writes R after its container runs (a moment later on containerd 2, which
    // reports the container running sooner): read it once it is there.
    const resourceSet = (pod: string) =>
      eventually(
        () => env.exec(pod, name, ["sh", "-c", "cat /mnt/flux/config/etc/flux/system/R"]),
        { timeoutMs: 60_000, intervalMs: 500 },
      );
    const leadR = await resourceSet(lead);
    assert.equal(await resourceSet(follower), leadR);
    assert.match(leadR, /"core": "0"/, leadR);
    const onLead = (script: string) =>
      env.exec(lead, name, ["bash", "/mnt/flux/flux-connect.sh"], script);
    const list = await eventually(async () => {
      const out = await onLead("flux resource list\n");
      if (resourceRow(out, "free")?.nodes !== 2) throw new Error(`not both brokers up:\n${out}`);
      return out;
    }, { timeoutMs: 120_000, intervalMs: 2000 });
    assert.deepEqual(resourceRow(list, "free"), { nodes: 2, cores: granted }, list);
    assert.equal(granted, 2);

    // As many tasks as cores run, one per broker; one more is refused at once, not oversubscribed.
    const fits = await onLead("flux run -n2 --label-io hostname\n");
    assert.match(fits, new RegExp(`^0: ${name}-0$`, "m"), fits);
    assert.match(fits, new RegExp(`^1: ${name}-1$`, "m"), fits);
    const tooMany = await onLead(
      'flux run -n3 hostname 2>&1; echo "exit $?"\nflux jobs -a -o "{status} {exception.note}"\n',
    );
    assert.match(tooMany, /unsatisfiable/, tooMany);
    assert.match(tooMany, /^exit [1-9]\d*$/m, tooMany);
    assert.doesNotMatch(tooMany, new RegExp(`^${name}-\\d$`, "m"), tooMany);
  },
);

realTest(
  "real: on a node of two threads per core (hwloc's view) no broker is drained, and -n<threads> is refused",
  async (env) => {
    const name = "cores-smt";
    const node = await firstRealNode();
    // The node's CPUs described to hwloc as cores of two hardware threads each, the way most cloud
    // VMs are: its Kubernetes CPUs are threads, half as many cores. flux-core reads the topology
    // from FLUX_HWLOC_XMLFILE (its own tests do) and restricts it to the container's cpuset.
    const cpus = Number(
      await kubectl(["get", "node", node, "-o", "jsonpath={.status.capacity.cpu}"]),
    );
    assert.ok(cpus >= 2 && cpus % 2 === 0, `node ${node}: ${cpus} CPUs, want an even number`);
    const cores = cpus / 2;
    const topology = `${name}-topology`;
    await kubectl(["-n", env.namespace, "apply", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: topology },
        data: { "topology.xml": smtTopologyXml(cores, 2) },
      }),
    });
    try {
      await env.apply(twoOneCoreBrokers(name, node, {
        environment: { FLUX_HWLOC_XMLFILE: "/etc/flux-topology/topology.xml" },
        volumes: {
          topology: { configMapName: topology, path: "/etc/flux-topology", readOnly: true },
        },
      }));
      const pods = await runningPods(env, name, 2);
      const [lead, follower] = pods.map((p) => p.metadata!.name!);

      // No broker drained: both free with their cores, no drain reason, no "missing resources".
      const onLead = (script: string) =>
        env.exec(lead, name, ["bash", "/mnt/flux/flux-connect.sh"], script);
      const list = await eventually(async () => {
        const out = await onLead("flux resource list\n");
        if (resourceRow(out, "free")?.nodes !== 2) {
          throw new Error(`not both brokers free:\n${out}`);
        }
        return out;
      }, { timeoutMs: 120_000, intervalMs: 2000 });
      assert.deepEqual(resourceRow(list, "free"), { nodes: 2, cores: 2 }, list);
      assert.equal((await onLead('flux resource drain -no "{ranks} {reason}"\n')).trim(), "");
      for (const pod of [lead, follower]) {
        assert.doesNotMatch(await env.logs(pod, name), /missing resources/);
      }

      // Each broker's hwloc sees the synthetic topology: `cores` cores, two threads each, in its
      // cpuset; each advertises the smaller of that and its one granted CPU.
      const local =
        "source /mnt/flux/flux-view.sh && flux R encode --local | flux R decode --count=core";
      for (const pod of [lead, follower]) {
        const found = await env.exec(pod, name, ["bash", "-c", local]);
        assert.equal(found.trim(), String(cores), `${pod}: hwloc's cores: ${found}`);
        const written = await env.exec(pod, name, [
          "sh",
          "-c",
          "cat /mnt/flux/config/etc/flux/system/R",
        ]);
        assert.match(written, /"core": "0"/, `${pod}: ${written}`);
      }

      // One task per core runs; one per hardware thread hwloc sees (two per core, both brokers)
      // is refused at once, not left waiting.
      const fits = await onLead("flux run -n2 --label-io hostname\n");
      assert.match(fits, new RegExp(`^0: ${name}-0$`, "m"), fits);
      assert.match(fits, new RegExp(`^1: ${name}-1$`, "m"), fits);
      const threads = 2 * 2 * cores;
      const tooMany = await onLead(
        `flux run -n${threads} hostname 2>&1; echo "exit $?"\n`,
      );
      assert.match(tooMany, /unsatisfiable/, tooMany);
      assert.match(tooMany, /^exit [1-9]\d*$/m, tooMany);
    } finally {
      await kubectl(["-n", env.namespace, "delete", "configmap", topology, "--ignore-not-found"])
        .catch(() => {});
    }
  },
);
