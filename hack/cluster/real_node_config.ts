// Configuration files of the real nodes: containerd, its registry hosts, CNI, the kubelet,
// kube-proxy and cluster DNS. Pure: everything comes in through `RealNodeLayout`, so the files
// can be read side by side and unit-tested without a node.
//
// The network: one bridge for all real nodes of the machine, its address the gateway of every
// pod and the node address of every kubelet (they differ by port). Each node hands out pod
// addresses from its own /24 of POD_NETWORK. Nothing masquerades, and a FORWARD rule drops what
// would leave the bridge for another interface: pods reach each other, Services and the host,
// never the machine's network.

import { join } from "node:path";
import type { ContainerRuntime } from "./container_runtime.ts";

export const BRIDGE = "mcbr0";
export const POD_NETWORK = "10.89.0.0/16";
export const BRIDGE_IP = "10.89.0.1";
/** The conventional address of cluster DNS (kubeadm's: the tenth of the service range). */
export const CLUSTER_DNS_IP = "10.96.0.10";
const CLUSTER_DOMAIN = "cluster.local";
export const REAL_NODE_LABEL = "minicluster.local/real-node";
const REAL_NODE_PREFIX = "mc-real-";
/** Where every registry points: a port on loopback that nothing listens on. */
export const CLOSED_REGISTRY = "https://127.0.0.1:9";
/** Registries that get their own hosts.toml (containerd special-cases some, e.g. docker.io). */
export const REGISTRIES = ["_default", "docker.io", "ghcr.io", "registry.k8s.io", "quay.io"];

export function realNodeName(index: number): string {
  return `${REAL_NODE_PREFIX}${index}`;
}

/** The /24 of POD_NETWORK whose addresses node `index` hands out. */
export function podRange(index: number): { rangeStart: string; rangeEnd: string } {
  if (index < 0 || index > 253) throw new Error(`real node index out of range: ${index}`);
  return { rangeStart: `10.89.${index + 1}.2`, rangeEnd: `10.89.${index + 1}.254` };
}

/** Files and ports of one real node; every path under the node's own directory. */
export interface RealNodeLayout {
  name: string;
  index: number;
  dir: string;
  /** Port of the kubelet's API (logs, exec, port-forward), on BRIDGE_IP. */
  kubeletPort: number;
  /** Port of the kubelet's /healthz, on loopback. */
  kubeletHealthzPort: number;
  caCert: string;
  kubeletCert: string;
  kubeletKey: string;
  kubeconfig: string;
  sandboxImage: string;
  runtime: ContainerRuntime;
  /** The shim and runc containerd 2 starts (Debian's containerd finds Debian's on PATH). */
  shim: string;
  runc: string;
}

export function nodePaths(dir: string) {
  return {
    containerdConfig: join(dir, "containerd", "config.toml"),
    containerdRoot: join(dir, "containerd", "root"),
    containerdState: join(dir, "containerd", "state"),
    containerdSocket: join(dir, "containerd", "containerd.sock"),
    registryHosts: join(dir, "containerd", "certs.d"),
    cniConfDir: join(dir, "cni", "net.d"),
    cniIpam: join(dir, "cni", "ipam"),
    kubeletConfig: join(dir, "kubelet.yaml"),
    kubeletRoot: join(dir, "kubelet"),
    resolvConf: join(dir, "resolv.conf"),
    volumePlugins: join(dir, "volume-plugins"),
    podLogs: join(dir, "pod-logs"),
  };
}

/**
 * Each node's containers live in a cgroup of their own (kubelet's cgroupRoot), so that several
 * kubelets on one machine do not fight over /kubepods, and `down` finds every process to stop.
 */
export function cgroupRoot(name: string): string {
  return `/minicluster-${name}`;
}

const toml = (s: string) => JSON.stringify(s);

export function containerdConfig(l: RealNodeLayout): string {
  return l.runtime === "debian" ? containerd1Config(l) : containerd2Config(l);
}

/**
 * containerd 2's configuration (version 3): the CRI plugin split into its image service
 * (snapshotter, sandbox image, registries) and its runtime service (runc, CNI, OOM and network
 * namespace settings), with the same settings as Debian's containerd 1.6 below.
 */
function containerd2Config(l: RealNodeLayout): string {
  const p = nodePaths(l.dir);
  const images = `plugins.'io.containerd.cri.v1.images'`;
  const runtime = `plugins.'io.containerd.cri.v1.runtime'`;
  return [
    "# containerd 2 of a real node of the local cluster (hack/cluster/real_node_config.ts).",
    "version = 3",
    `root = ${toml(p.containerdRoot)}`,
    `state = ${toml(p.containerdState)}`,
    "# Root here may lack CAP_SYS_RESOURCE: containerd must not raise its own OOM score.",
    "oom_score = 0",
    "",
    "# In version 3 the ttrpc socket is the gRPC one's path plus .ttrpc: in the node's directory.",
    "[grpc]",
    `  address = ${toml(p.containerdSocket)}`,
    "",
    `[plugins.'io.containerd.internal.v1.opt']`,
    `  path = ${toml(join(l.dir, "containerd", "opt"))}`,
    "",
    "# NRI would listen on /var/run/nri/nri.sock, shared by the machine; no plugin uses it.",
    `[plugins.'io.containerd.nri.v1.nri']`,
    "  disable = true",
    "",
    `[${images}]`,
    `  snapshotter = "overlayfs"`,
    `  [${images}.pinned_images]`,
    `    sandbox = ${toml(l.sandboxImage)}`,
    `  [${images}.registry]`,
    "    # Every registry resolves to a closed port on loopback (hosts.toml): a missing image",
    "    # fails at once and no lookup or connection leaves the machine.",
    `    config_path = ${toml(p.registryHosts)}`,
    "",
    `[${runtime}]`,
    "  restrict_oom_score_adj = true",
    "  # Pod network namespaces under the state directory: /run/netns is shared with every",
    "  # `ip netns` user of the machine.",
    "  netns_mounts_under_state_dir = true",
    "  enable_selinux = false",
    `  [${runtime}.containerd]`,
    `    default_runtime_name = "runc"`,
    `    [${runtime}.containerd.runtimes.runc]`,
    `      runtime_type = "io.containerd.runc.v2"`,
    `      runtime_path = ${toml(l.shim)}`,
    `      [${runtime}.containerd.runtimes.runc.options]`,
    `        BinaryName = ${toml(l.runc)}`,
    "        SystemdCgroup = false",
    `        Root = ${toml(join(p.containerdState, "runc"))}`,
    `  [${runtime}.cni]`,
    `    bin_dirs = ["/usr/lib/cni"]`,
    `    conf_dir = ${toml(p.cniConfDir)}`,
    "    max_conf_num = 1",
    "",
  ].join("\n");
}

/** Debian's containerd 1.6 (configuration version 2, the CRI plugin in one table). */
function containerd1Config(l: RealNodeLayout): string {
  const p = nodePaths(l.dir);
  const cri = `plugins."io.containerd.grpc.v1.cri"`;
  return [
    "# containerd of a real node of the local cluster (hack/cluster/real_node_config.ts).",
    "version = 2",
    `root = ${toml(p.containerdRoot)}`,
    `state = ${toml(p.containerdState)}`,
    "# Root here may lack CAP_SYS_RESOURCE: containerd must not raise its own OOM score.",
    "oom_score = 0",
    "# Snapshotters other than overlayfs only log that their file system is missing",
    "disabled_plugins = [",
    `  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",`,
    `  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",`,
    "]",
    "",
    "[grpc]",
    `  address = ${toml(p.containerdSocket)}`,
    "",
    `[plugins."io.containerd.internal.v1.opt"]`,
    `  path = ${toml(join(l.dir, "containerd", "opt"))}`,
    "",
    `[${cri}]`,
    `  sandbox_image = ${toml(l.sandboxImage)}`,
    "  restrict_oom_score_adj = true",
    "  # Pod network namespaces under the state directory: /run/netns is shared with every",
    "  # `ip netns` user of the machine.",
    "  netns_mounts_under_state_dir = true",
    "  enable_selinux = false",
    `  [${cri}.containerd]`,
    `    snapshotter = "overlayfs"`,
    `    default_runtime_name = "runc"`,
    `    [${cri}.containerd.runtimes.runc]`,
    `      runtime_type = "io.containerd.runc.v2"`,
    `      [${cri}.containerd.runtimes.runc.options]`,
    "        SystemdCgroup = false",
    `        Root = ${toml(join(p.containerdState, "runc"))}`,
    `  [${cri}.cni]`,
    `    bin_dir = "/usr/lib/cni"`,
    `    conf_dir = ${toml(p.cniConfDir)}`,
    "    max_conf_num = 1",
    `  [${cri}.registry]`,
    "    # Every registry resolves to a closed port on loopback (hosts.toml): a missing image",
    "    # fails at once and no lookup or connection leaves the machine.",
    `    config_path = ${toml(p.registryHosts)}`,
    "",
  ].join("\n");
}

/** hosts.toml of one registry directory: its only host is CLOSED_REGISTRY. */
export function registryHostsToml(): string {
  return [
    "# No registry is ever contacted: images are built locally and imported.",
    `server = ${toml(CLOSED_REGISTRY)}`,
    "",
    `[host.${toml(CLOSED_REGISTRY)}]`,
    `  capabilities = ["pull", "resolve"]`,
    "",
  ].join("\n");
}

export function cniConfig(l: RealNodeLayout): string {
  const p = nodePaths(l.dir);
  return JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: "minicluster",
      plugins: [
        {
          type: "bridge",
          bridge: BRIDGE,
          isGateway: true,
          // No masquerading: pod traffic never leaves the machine (see the FORWARD rule).
          ipMasq: false,
          // A pod reaching itself through a Service IP comes back over the same bridge port.
          hairpinMode: true,
          ipam: {
            type: "host-local",
            ranges: [[{ subnet: POD_NETWORK, gateway: BRIDGE_IP, ...podRange(l.index) }]],
            routes: [{ dst: "0.0.0.0/0" }],
            dataDir: p.cniIpam,
          },
        },
        { type: "portmap", capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  ) + "\n";
}

/** Pods see cluster DNS only; the machine's resolver is never handed to a pod. */
export function resolvConf(): string {
  return `nameserver ${CLUSTER_DNS_IP}\n`;
}

export function kubeletConfig(l: RealNodeLayout): Record<string, unknown> {
  const p = nodePaths(l.dir);
  return {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: BRIDGE_IP,
    port: l.kubeletPort,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: l.kubeletHealthzPort,
    tlsCertFile: l.kubeletCert,
    tlsPrivateKeyFile: l.kubeletKey,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: l.caCert },
    },
    authorization: { mode: "Webhook" },
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    imageServiceEndpoint: `unix://${p.containerdSocket}`,
    cgroupDriver: "cgroupfs",
    cgroupRoot: cgroupRoot(l.name),
    failCgroupV1: false,
    failSwapOn: false,
    // Root here may lack CAP_SYS_RESOURCE (see containerd's oom_score).
    oomScoreAdj: 0,
    resolvConf: p.resolvConf,
    clusterDNS: [CLUSTER_DNS_IP],
    clusterDomain: CLUSTER_DOMAIN,
    volumePluginDir: p.volumePlugins,
    podLogsDir: p.podLogs,
    staticPodPath: "",
    registerWithTaints: [{ key: REAL_NODE_LABEL, value: "true", effect: "NoSchedule" }],
    // Imported images cannot be pulled again: never collect them, and never evict pods because
    // the machine's disk is fuller than a production node's would be.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: {
      "memory.available": "100Mi",
      "nodefs.available": "1%",
      "nodefs.inodesFree": "1%",
      "imagefs.available": "1%",
    },
    serializeImagePulls: false,
    maxPods: 110,
  };
}

export function kubeletArgs(l: RealNodeLayout): string[] {
  const p = nodePaths(l.dir);
  return [
    `--config=${p.kubeletConfig}`,
    `--kubeconfig=${l.kubeconfig}`,
    `--root-dir=${p.kubeletRoot}`,
    `--hostname-override=${l.name}`,
    `--node-ip=${BRIDGE_IP}`,
    `--node-labels=${REAL_NODE_LABEL}=true`,
  ];
}

export interface KubeProxyLayout {
  kubeconfig: string;
  healthzPort: number;
  metricsPort: number;
  hostname: string;
}

export function kubeProxyConfig(l: KubeProxyLayout): Record<string, unknown> {
  return {
    apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
    kind: "KubeProxyConfiguration",
    clientConnection: { kubeconfig: l.kubeconfig },
    mode: "iptables",
    clusterCIDR: POD_NETWORK,
    hostnameOverride: l.hostname,
    healthzBindAddress: `127.0.0.1:${l.healthzPort}`,
    metricsBindAddress: `127.0.0.1:${l.metricsPort}`,
    // NodePorts on the bridge only (loopback would need route_localnet, a sysctl change).
    nodePortAddresses: [`${BRIDGE_IP}/32`],
    // Zero leaves the machine's conntrack sysctls as they are.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: "0s", tcpCloseWaitTimeout: "0s" },
    iptables: { minSyncPeriod: "1s", syncPeriod: "30s" },
  };
}

export const COREDNS_NAMESPACE = "kube-system";

/**
 * Cluster DNS: CoreDNS (built from its Go module into a local image) as a Deployment on the real
 * nodes, behind the Service `kube-dns` at CLUSTER_DNS_IP. It answers for the cluster's names
 * only: there is no `forward`, so no query ever leaves the machine.
 */
export function coreDnsObjects(image: string): Record<string, unknown>[] {
  const labels = { "k8s-app": "kube-dns" };
  const meta = (name: string) => ({ name, namespace: COREDNS_NAMESPACE, labels });
  const corefile = [
    ".:53 {",
    "    errors",
    "    health :8080",
    "    ready :8181",
    `    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {`,
    "        pods insecure",
    "        fallthrough in-addr.arpa ip6.arpa",
    "        ttl 5",
    "    }",
    "    cache 5",
    "    loadbalance",
    "}",
    "",
  ].join("\n");
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta("coredns") },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "system:coredns", labels },
      rules: [
        {
          apiGroups: [""],
          resources: ["endpoints", "services", "pods", "namespaces"],
          verbs: ["list", "watch"],
        },
        {
          apiGroups: ["discovery.k8s.io"],
          resources: ["endpointslices"],
          verbs: ["list", "watch"],
        },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "system:coredns", labels },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "system:coredns",
      },
      subjects: [{ kind: "ServiceAccount", name: "coredns", namespace: COREDNS_NAMESPACE }],
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta("coredns"),
      data: { Corefile: corefile },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: meta("coredns"),
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: "coredns",
            dnsPolicy: "Default",
            priorityClassName: "system-cluster-critical",
            nodeSelector: { [REAL_NODE_LABEL]: "true" },
            tolerations: [{ key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" }],
            containers: [{
              name: "coredns",
              image,
              imagePullPolicy: "Never",
              args: ["-conf", "/etc/coredns/Corefile"],
              ports: [
                { name: "dns", containerPort: 53, protocol: "UDP" },
                { name: "dns-tcp", containerPort: 53, protocol: "TCP" },
              ],
              readinessProbe: { httpGet: { path: "/ready", port: 8181 }, periodSeconds: 2 },
              livenessProbe: { httpGet: { path: "/health", port: 8080 }, periodSeconds: 10 },
              resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { memory: "128Mi" } },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
              },
              volumeMounts: [{ name: "config", mountPath: "/etc/coredns", readOnly: true }],
            }],
            volumes: [{ name: "config", configMap: { name: "coredns" } }],
          },
        },
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: meta("kube-dns"),
      spec: {
        selector: labels,
        clusterIP: CLUSTER_DNS_IP,
        ports: [
          { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
          { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
        ],
      },
    },
  ];
}
