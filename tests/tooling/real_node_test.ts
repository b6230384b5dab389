// Pure parts of the real nodes (hack/cluster/real_node_config.ts, host.ts): the files a kubelet,
// containerd, CNI and kube-proxy run with, and the apiserver flags real nodes need.

import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureBinaries } from "../../hack/cluster/binaries.ts";
import { type ContainerRuntime, runtimeBinaries } from "../../hack/cluster/container_runtime.ts";
import { apiserverArgs, type ComponentContext } from "../../hack/cluster/components.ts";
import { mountsUnder } from "../../hack/cluster/host.ts";
import { pkiFiles } from "../../hack/cluster/pki.ts";
import {
  BRIDGE,
  BRIDGE_IP,
  CLOSED_REGISTRY,
  CLUSTER_DNS_IP,
  cniConfig,
  containerdConfig,
  coreDnsObjects,
  kubeletArgs,
  kubeletConfig,
  kubeProxyConfig,
  podRange,
  REAL_NODE_LABEL,
  type RealNodeLayout,
  registryHostsToml,
  resolvConf,
} from "../../hack/cluster/real_node_config.ts";

const layout = (index: number, runtime: ContainerRuntime = "v2"): RealNodeLayout => ({
  name: `mc-real-${index}`,
  index,
  dir: `/state/nodes/mc-real-${index}`,
  kubeletPort: 20250 + index,
  kubeletHealthzPort: 20260 + index,
  caCert: "/state/pki/ca.crt",
  kubeletCert: "/state/pki/kubelet.crt",
  kubeletKey: "/state/pki/kubelet.key",
  kubeconfig: "/state/pki/kubelet.kubeconfig",
  sandboxImage: "minicluster.local/pause:3.10",
  runtime,
  shim: "/bin/shim-of-the-node",
  runc: "/bin/runc-of-the-node",
});

/**
 * What a containerd makes of a configuration file (`containerd config dump`: every setting,
 * migrated to its current version, under the table it takes effect in), as "table.key" → value.
 */
async function effectiveConfig(containerd: string, toml: string): Promise<Map<string, string>> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "config.toml"), toml);
    const out = await new Deno.Command(containerd, {
      args: ["--config", join(dir, "config.toml"), "config", "dump"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const settings = new Map<string, string>();
    let table = "";
    for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
      const header = line.match(/^\s*\[(.*)\]\s*$/);
      if (header) table = header[1].replaceAll(/['"]/g, "");
      const kv = line.match(/^\s*(\w+) = (.*)$/);
      if (kv) settings.set(table ? `${table}.${kv[1]}` : kv[1], kv[2].replaceAll(/['"]/g, ""));
    }
    return settings;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The settings both runtimes must end up with, by the tables of containerd 2. */
function assertNodeSettings(
  settings: Map<string, string>,
  cri: { snapshotter: string; registry: string; runtime: string },
) {
  const node = "/state/nodes/mc-real-0";
  const expected: Record<string, string> = {
    root: `${node}/containerd/root`,
    state: `${node}/containerd/state`,
    oom_score: "0",
    [`${cri.snapshotter}.snapshotter`]: "overlayfs",
    [`${cri.registry}.registry.config_path`]: `${node}/containerd/certs.d`,
    [`${cri.runtime}.restrict_oom_score_adj`]: "true",
    [`${cri.runtime}.netns_mounts_under_state_dir`]: "true",
    [`${cri.runtime}.containerd.default_runtime_name`]: "runc",
    [`${cri.runtime}.containerd.runtimes.runc.options.SystemdCgroup`]: "false",
    [`${cri.runtime}.containerd.runtimes.runc.options.Root`]: `${node}/containerd/state/runc`,
    [`${cri.runtime}.cni.conf_dir`]: `${node}/cni/net.d`,
    [`${cri.runtime}.cni.max_conf_num`]: "1",
  };
  for (const [key, value] of Object.entries(expected)) {
    assert.equal(settings.get(key), value, key);
  }
}

Deno.test("real node: containerd 2 takes every setting, its state in the node's directory", async () => {
  const { containerd } = runtimeBinaries("v2", await ensureBinaries(["containerd"]));
  const settings = await effectiveConfig(containerd, containerdConfig(layout(0, "v2")));
  const images = "plugins.io.containerd.cri.v1.images";
  const runtime = "plugins.io.containerd.cri.v1.runtime";
  assertNodeSettings(settings, { snapshotter: images, registry: images, runtime });
  assert.equal(settings.get(`${images}.pinned_images.sandbox`), "minicluster.local/pause:3.10");
  assert.equal(
    settings.get(`${runtime}.containerd.runtimes.runc.options.BinaryName`),
    "/bin/runc-of-the-node",
  );
  assert.equal(
    settings.get(`${runtime}.containerd.runtimes.runc.runtime_path`),
    "/bin/shim-of-the-node",
  );
  assert.equal(settings.get(`${runtime}.cni.bin_dirs`), "[/usr/lib/cni]");
  // Sockets the machine shares stay closed: NRI off, gRPC and ttrpc in the node's directory.
  assert.equal(settings.get("plugins.io.containerd.nri.v1.nri.disable"), "true");
  for (const server of ["grpc", "ttrpc"]) {
    assert.equal(
      settings.get(`plugins.io.containerd.server.v1.${server}.address`),
      `/state/nodes/mc-real-0/containerd/containerd.sock${server === "ttrpc" ? ".ttrpc" : ""}`,
    );
  }
});

Deno.test("real node: Debian's containerd 1.6 takes the same settings", async () => {
  const { containerd } = runtimeBinaries("debian", "");
  if (!await Deno.stat(containerd).then(() => true, () => false)) {
    throw new Error(`${containerd} is missing: apt-get install containerd`);
  }
  const settings = await effectiveConfig(containerd, containerdConfig(layout(0, "debian")));
  const cri = "plugins.io.containerd.grpc.v1.cri";
  assertNodeSettings(settings, { snapshotter: `${cri}.containerd`, registry: cri, runtime: cri });
  assert.equal(settings.get(`${cri}.sandbox_image`), "minicluster.local/pause:3.10");
  assert.equal(settings.get("grpc.address"), "/state/nodes/mc-real-0/containerd/containerd.sock");
});

Deno.test("real node: every registry is a closed port on loopback", () => {
  const hosts = registryHostsToml();
  assert.match(hosts, new RegExp(`^server = "${CLOSED_REGISTRY}"$`, "m"));
  assert.ok(CLOSED_REGISTRY.startsWith("https://127.0.0.1:"));
  assert.doesNotMatch(hosts, /docker\.io|ghcr|registry-1/);
});

Deno.test("real node: CNI bridge without masquerading, one /24 per node, hairpin on", () => {
  const [a, b] = [0, 1].map((i) => JSON.parse(cniConfig(layout(i))));
  const bridge = a.plugins[0];
  assert.equal(bridge.type, "bridge");
  assert.equal(bridge.bridge, BRIDGE);
  assert.equal(bridge.ipMasq, false);
  assert.equal(bridge.hairpinMode, true);
  assert.equal(bridge.ipam.ranges[0][0].gateway, BRIDGE_IP);
  assert.deepEqual(bridge.ipam.ranges[0][0].rangeStart, "10.89.1.2");
  assert.deepEqual(b.plugins[0].ipam.ranges[0][0].rangeStart, "10.89.2.2");
  assert.equal(a.plugins[1].type, "portmap");
  assert.throws(() => podRange(254));
});

Deno.test("real node: kubelet is labelled, tainted, and resolves cluster names only", () => {
  const l = layout(1);
  const config = kubeletConfig(l);
  assert.equal(config.address, BRIDGE_IP);
  assert.equal(config.port, 20251);
  assert.equal(config.readOnlyPort, 0);
  assert.deepEqual(config.clusterDNS, [CLUSTER_DNS_IP]);
  assert.deepEqual(config.registerWithTaints, [
    { key: REAL_NODE_LABEL, value: "true", effect: "NoSchedule" },
  ]);
  assert.equal(config.cgroupRoot, "/minicluster-mc-real-1");
  assert.equal(config.imageGCHighThresholdPercent, 100);
  assert.equal(resolvConf(), `nameserver ${CLUSTER_DNS_IP}\n`);
  const args = kubeletArgs(l);
  assert.ok(args.includes(`--node-labels=${REAL_NODE_LABEL}=true`));
  assert.ok(args.includes("--hostname-override=mc-real-1"));
  assert.ok(args.includes(`--node-ip=${BRIDGE_IP}`));
});

Deno.test("real node: kube-proxy leaves sysctls alone and node ports on the bridge", () => {
  const config = kubeProxyConfig({
    kubeconfig: "/k",
    healthzPort: 1,
    metricsPort: 2,
    hostname: "mc-real-0",
  });
  assert.equal(config.mode, "iptables");
  assert.deepEqual(config.nodePortAddresses, [`${BRIDGE_IP}/32`]);
  assert.equal((config.conntrack as { maxPerCore: number }).maxPerCore, 0);
  assert.equal(config.healthzBindAddress, "127.0.0.1:1");
});

Deno.test("real node: CoreDNS on a real node behind kube-dns, with no forwarder", () => {
  const objects = coreDnsObjects("minicluster.local/coredns:v1");
  // deno-lint-ignore no-explicit-any -- a test reading nested fields of plain objects
  const byKind = (kind: string) => objects.find((o) => o.kind === kind) as Record<string, any>;
  assert.equal(byKind("Service").spec.clusterIP, CLUSTER_DNS_IP);
  assert.equal(byKind("Service").metadata.name, "kube-dns");
  const corefile: string = byKind("ConfigMap").data.Corefile;
  assert.match(corefile, /kubernetes cluster\.local/);
  assert.doesNotMatch(corefile, /forward/);
  const pod = byKind("Deployment").spec.template.spec;
  assert.equal(pod.nodeSelector[REAL_NODE_LABEL], "true");
  assert.equal(pod.tolerations[0].key, REAL_NODE_LABEL);
  assert.equal(pod.containers[0].imagePullPolicy, "Never");
});

Deno.test("apiserver with real nodes: advertises the bridge, can reach kubelets", () => {
  const ctx: ComponentContext = {
    bin: (n) => `/bin/${n}`,
    ports: { etcdClient: 1, etcdPeer: 2, apiserver: 3, controllerManager: 4, scheduler: 5 },
    pki: pkiFiles("/state/pki"),
    kubeconfig: "/state/kubeconfig",
    etcdDataDir: "/state/etcd",
    kwokConfig: "/state/kwok.yaml",
    kubernetesVersion: "v1.37.2",
    realNodes: true,
  };
  const args = apiserverArgs(ctx);
  assert.ok(args.includes(`--advertise-address=${BRIDGE_IP}`));
  assert.ok(args.includes("--kubelet-client-certificate=/state/pki/admin.crt"));
  assert.ok(args.includes("--kubelet-preferred-address-types=InternalIP,Hostname"));
  const kwokOnly = apiserverArgs({ ...ctx, realNodes: false });
  assert.ok(kwokOnly.includes("--bind-address=127.0.0.1"));
  assert.ok(!kwokOnly.some((a) => a.startsWith("--kubelet-client")));
  assert.ok(kwokOnly.includes("--endpoint-reconciler-type=none"));
  assert.ok(!args.some((a) => a.startsWith("--endpoint-reconciler-type")));
});

Deno.test("host: mounts under a directory, deepest first, escapes decoded", () => {
  const mountinfo = [
    "22 1 0:20 / / rw - ext4 /dev/vda rw",
    "30 22 0:30 / /state/nodes/a rw - tmpfs tmpfs rw",
    "31 30 0:31 / /state/nodes/a/b\\040c/d rw - overlay overlay rw",
    "32 22 0:32 / /state-other rw - tmpfs tmpfs rw",
    "33 30 0:33 / /state/nodes/a/e rw - tmpfs tmpfs rw",
  ].join("\n");
  assert.deepEqual(mountsUnder(mountinfo, "/state"), [
    "/state/nodes/a/b c/d",
    "/state/nodes/a/e",
    "/state/nodes/a",
  ]);
});
