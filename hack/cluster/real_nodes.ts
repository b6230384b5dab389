// Real nodes beside the KWOK ones: per node a containerd and a kubelet, and for the machine one
// kube-proxy and cluster DNS (CoreDNS as a Pod). Pods there really run, from images built locally
// (hack/images) and imported into each node's containerd. Configuration files come from
// real_node_config.ts; what is changed on the machine, and undone by `down`, from host.ts.

import { join } from "node:path";
import { stringify } from "yaml";
import { type ApiConnection, waitFor } from "./api.ts";
import {
  assertBridgeFree,
  createCgroupRoot,
  ensureBridge,
  ensureFirewall,
  type HostRecord,
  missingForRealNodes,
  recordHost,
  removeCgroups,
  restoreHost,
  run,
  unmountUnder,
} from "./host.ts";
import { renderKubeconfig } from "./kubeconfig.ts";
import { ensureDebianPackages } from "../debian.ts";
import { issueLeaf, pkiFiles } from "./pki.ts";
import { freeLoopbackPorts } from "./ports.ts";
import { ExitWatch, isRunning, namesDir, spawnDaemon, stopGroups } from "./processes.ts";
import {
  type ContainerRuntime,
  DEFAULT_CONTAINER_RUNTIME,
  type RuntimeBinaries,
  runtimeBinaries,
  runtimePackages,
} from "./container_runtime.ts";
import {
  BRIDGE_IP,
  cgroupRoot,
  cniConfig,
  containerdConfig,
  COREDNS_NAMESPACE,
  coreDnsObjects,
  kubeletArgs,
  kubeletConfig,
  kubeProxyConfig,
  nodePaths,
  type RealNodeLayout,
  realNodeName,
  REGISTRIES,
  registryHostsToml,
  resolvConf,
} from "./real_node_config.ts";
import { ClusterPaths, type ClusterState, type RealNodesState, writeState } from "./state.ts";

const log = (msg: string) => console.error(`[cluster] ${msg}`);

/** The runtime the real nodes of `state` run; a state from before the choice ran Debian's. */
export function runtimeOf(state: ClusterState): ContainerRuntime {
  return state.real ? state.real.runtime ?? "debian" : DEFAULT_CONTAINER_RUNTIME;
}

/** The runtime's programs of the real nodes of `state` (the shims are found by command line). */
export function nodeRuntime(state: ClusterState): RuntimeBinaries {
  return runtimeBinaries(runtimeOf(state), state.binDir);
}

/**
 * The checks of a machine before anything is changed: fails with the list of what is missing.
 * The Debian packages a real node runs on are installed when missing (as the suite does
 * shellcheck); containerd 2 and runc are built by hack/build-binaries.sh.
 */
export async function preflight(owner: string, runtime: ContainerRuntime): Promise<void> {
  await ensureDebianPackages(runtimePackages(runtime));
  const missing = await missingForRealNodes(
    runtime === "debian" ? ["containerd", "runc", "ctr"] : [],
  );
  if (missing.length > 0) {
    throw new Error(`real nodes cannot run on this machine; missing: ${missing.join("; ")}`);
  }
  await assertBridgeFree(owner);
}

/**
 * The bridge must exist before the apiserver starts (it advertises the bridge address, which
 * pods reach through the `kubernetes` Service), so this comes first; the machine's state is
 * recorded once, before the first change.
 */
export async function prepareHost(
  paths: ClusterPaths,
  state: ClusterState,
  runtime: ContainerRuntime,
): Promise<HostRecord> {
  const host = state.real?.host ?? await recordHost();
  state.real ??= {
    count: 0,
    host,
    runtime,
    pids: {},
    ports: { kubelet: [], kubeletHealthz: [], proxyHealthz: 0, proxyMetrics: 0 },
  };
  await writeState(paths, state);
  await ensureBridge(paths.dir);
  return host;
}

export interface RealNodeImages {
  pause: string;
  coredns: string;
  /** Docker archives imported into every node's containerd. */
  archives: string[];
}

/** The binary each real-node daemon runs, by its key in `RealNodesState.pids`. */
function binaryOf(state: ClusterState, key: string): string {
  if (key.startsWith("containerd/")) return nodeRuntime(state).containerd;
  return join(state.binDir, key.split("/")[0]);
}

/** The real nodes' daemons for `status`. */
export function realNodeDaemons(
  state: ClusterState,
): { name: string; pid: number; running: boolean }[] {
  return Object.entries(state.real?.pids ?? {}).map(([name, pid]) => ({
    name,
    pid,
    running: isRunning(pid, binaryOf(state, name)),
  }));
}

function running(real: RealNodesState, key: string, binary: string): boolean {
  const pid = real.pids[key];
  return pid !== undefined && isRunning(pid, binary);
}

async function write(path: string, text: string, mode?: number): Promise<void> {
  await Deno.mkdir(join(path, ".."), { recursive: true });
  await Deno.writeTextFile(path, text, mode === undefined ? {} : { mode });
}

async function nodeKubeconfig(
  paths: ClusterPaths,
  state: ClusterState,
  name: string,
  subject: string,
): Promise<string> {
  const pki = pkiFiles(paths.pki);
  const cert = await issueLeaf(paths.pki, name, { subject, usage: "clientAuth" });
  const file = join(paths.pki, `${name}.kubeconfig`);
  const read = (p: string) => Deno.readTextFile(p);
  await write(
    file,
    renderKubeconfig({
      server: `https://127.0.0.1:${state.ports.apiserver}`,
      caCertPem: await read(pki.caCert),
      clientCertPem: await read(cert.cert),
      clientKeyPem: await read(cert.key),
      name,
    }),
    0o600,
  );
  return file;
}

function layoutOf(
  paths: ClusterPaths,
  state: ClusterState,
  index: number,
  pause: string,
): RealNodeLayout {
  const real = state.real!;
  const name = realNodeName(index);
  if (real.ports.kubelet[index] === undefined) {
    [real.ports.kubelet[index], real.ports.kubeletHealthz[index]] = freeLoopbackPorts(2);
  }
  const serving = join(paths.pki, `kubelet-serving-${name}`);
  return {
    name,
    index,
    dir: paths.node(name),
    kubeletPort: real.ports.kubelet[index],
    kubeletHealthzPort: real.ports.kubeletHealthz[index],
    caCert: pkiFiles(paths.pki).caCert,
    kubeletCert: `${serving}.crt`,
    kubeletKey: `${serving}.key`,
    kubeconfig: join(paths.pki, `kubelet-${name}.kubeconfig`),
    sandboxImage: pause,
    runtime: runtimeOf(state),
    shim: nodeRuntime(state).shim,
    runc: nodeRuntime(state).runc,
  };
}

async function writeNodeFiles(paths: ClusterPaths, state: ClusterState, l: RealNodeLayout) {
  const p = nodePaths(l.dir);
  await write(p.containerdConfig, containerdConfig(l));
  for (const registry of REGISTRIES) {
    await write(join(p.registryHosts, registry, "hosts.toml"), registryHostsToml());
  }
  await write(join(p.cniConfDir, "10-minicluster.conflist"), cniConfig(l));
  await write(p.resolvConf, resolvConf());
  await write(p.kubeletConfig, stringify(kubeletConfig(l)));
  for (const d of [p.kubeletRoot, p.volumePlugins, p.podLogs, p.cniIpam]) {
    await Deno.mkdir(d, { recursive: true });
  }
  if (!await Deno.stat(l.kubeletCert).then(() => true, () => false)) {
    await issueLeaf(paths.pki, `kubelet-serving-${l.name}`, {
      subject: `/O=system:nodes/CN=system:node:${l.name}`,
      usage: "serverAuth",
      subjectAltNames: [`IP:${BRIDGE_IP}`, `DNS:${l.name}`],
    });
  }
  await nodeKubeconfig(
    paths,
    state,
    `kubelet-${l.name}`,
    `/O=system:nodes/CN=system:node:${l.name}`,
  );
}

async function containerdReady(ctr: string, socket: string): Promise<boolean> {
  return await run(ctr, ["--address", socket, "version"]).then(() => true, () => false);
}

/** Imports each archive once per node (the archive path is its content key). */
async function importImages(
  ctr: string,
  nodeDir: string,
  socket: string,
  archives: string[],
): Promise<void> {
  const record = join(nodeDir, "imported.json");
  const done: string[] = JSON.parse(await Deno.readTextFile(record).catch(() => "[]"));
  for (const archive of archives) {
    if (done.includes(archive)) continue;
    const t0 = performance.now();
    await run(ctr, [
      "--address",
      socket,
      "-n",
      "k8s.io",
      "images",
      "import",
      "--snapshotter",
      "overlayfs",
      archive,
    ]);
    log(`imported ${archive.split("/").pop()} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    done.push(archive);
    await Deno.writeTextFile(record, JSON.stringify(done));
  }
}

/** Imports archives into every real node of a running cluster (an image built after `up`). */
export async function importIntoRealNodes(dir: string, archives: string[]): Promise<void> {
  const paths = new ClusterPaths(dir);
  const state = JSON.parse(await Deno.readTextFile(paths.state)) as ClusterState;
  for (let i = 0; i < (state.real?.count ?? 0); i++) {
    const nodeDir = paths.node(realNodeName(i));
    await importImages(
      nodeRuntime(state).ctr,
      nodeDir,
      nodePaths(nodeDir).containerdSocket,
      archives,
    );
  }
}

async function startDaemon(
  paths: ClusterPaths,
  state: ClusterState,
  key: string,
  binary: string,
  args: string[],
): Promise<boolean> {
  const real = state.real!;
  if (running(real, key, binary)) return false;
  real.pids[key] = spawnDaemon({ binary, args, logFile: paths.daemonLog(key), cwd: paths.dir });
  await writeState(paths, state);
  return true;
}

async function tail(file: string, lines = 10): Promise<string> {
  const text = await Deno.readTextFile(file).catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

async function waitDaemon(
  paths: ClusterPaths,
  state: ClusterState,
  key: string,
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const watch = new ExitWatch();
  await waitFor(async () => {
    const seen = watch.exitSeen(state.real!.pids[key]);
    if (seen) throw new Error(`${key} exited (${seen}):\n${await tail(paths.daemonLog(key))}`);
    return await check();
  }, {
    timeoutMs,
    intervalMs: 200,
    describe: async () => `timed out waiting for ${what}:\n${await tail(paths.daemonLog(key))}`,
  });
}

interface NodeObject {
  spec?: { taints?: { key: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

/**
 * Starts what is missing of `count` real nodes, kube-proxy and CoreDNS; imports `images`. The
 * control plane (with the real-node apiserver flags) and the controller manager already run.
 */
export async function startRealNodes(
  paths: ClusterPaths,
  state: ClusterState,
  api: ApiConnection,
  count: number,
  images: RealNodeImages,
  nodeSchedulable: (node: NodeObject | undefined) => boolean,
): Promise<void> {
  const t0 = performance.now();
  const real = state.real!;
  await ensureFirewall(state.ports.apiserver);
  const kubelet = join(state.binDir, "kubelet");
  const kubeProxy = join(state.binDir, "kube-proxy");
  const { containerd, ctr } = nodeRuntime(state);
  const total = Math.max(count, real.count);
  for (let i = 0; i < total; i++) {
    const l = layoutOf(paths, state, i, images.pause);
    const p = nodePaths(l.dir);
    if (!running(real, `containerd/${l.name}`, containerd)) await writeNodeFiles(paths, state, l);
    await startDaemon(paths, state, `containerd/${l.name}`, containerd, [
      "--config",
      p.containerdConfig,
    ]);
    await waitDaemon(
      paths,
      state,
      `containerd/${l.name}`,
      `containerd of ${l.name}`,
      () => containerdReady(ctr, p.containerdSocket),
    );
    await importImages(ctr, l.dir, p.containerdSocket, images.archives);
    await createCgroupRoot(cgroupRoot(l.name));
    await startDaemon(paths, state, `kubelet/${l.name}`, kubelet, kubeletArgs(l));
  }
  real.count = total;
  await writeState(paths, state);

  if (!real.ports.proxyHealthz) {
    [real.ports.proxyHealthz, real.ports.proxyMetrics] = freeLoopbackPorts(2);
  }
  const proxyConfig = join(paths.dir, "kube-proxy.yaml");
  // A running kube-proxy exits when its configuration file is written, even unchanged: `up` run
  // again over a running cluster leaves it alone.
  if (!running(real, "kube-proxy", kubeProxy)) {
    await write(
      proxyConfig,
      stringify(kubeProxyConfig({
        kubeconfig: await nodeKubeconfig(paths, state, "kube-proxy", "/CN=system:kube-proxy"),
        healthzPort: real.ports.proxyHealthz,
        metricsPort: real.ports.proxyMetrics,
        hostname: realNodeName(0),
      })),
    );
  }
  await startDaemon(paths, state, "kube-proxy", kubeProxy, [`--config=${proxyConfig}`]);

  for (const obj of coreDnsObjects(images.coredns)) await api.ensure(collectionOf(obj), obj);

  const nodeNames = Array.from({ length: total }, (_, i) => realNodeName(i));
  await Promise.all(nodeNames.map((name) =>
    waitDaemon(
      paths,
      state,
      `kubelet/${name}`,
      `node ${name} Ready`,
      async () => nodeSchedulable(await api.getJson<NodeObject>(`/api/v1/nodes/${name}`)),
      120_000,
    )
  ));
  await waitDaemon(
    paths,
    state,
    "kube-proxy",
    "CoreDNS Ready (cluster DNS)",
    async () => {
      const d = await api.getJson<{ status?: { readyReplicas?: number } }>(
        `/apis/apps/v1/namespaces/${COREDNS_NAMESPACE}/deployments/coredns`,
      );
      return (d?.status?.readyReplicas ?? 0) >= 1;
    },
    120_000,
  );
  log(
    `${total} real node(s) Ready with kube-proxy and CoreDNS ` +
      `(${((performance.now() - t0) / 1000).toFixed(1)} s)`,
  );
}

function collectionOf(obj: Record<string, unknown>): string {
  const { apiVersion, kind } = obj as { apiVersion: string; kind: string };
  const ns = (obj.metadata as { namespace?: string }).namespace;
  const plural = `${kind.toLowerCase()}s`;
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return ns ? `${base}/namespaces/${ns}/${plural}` : `${base}/${plural}`;
}

/**
 * Stops the real nodes and undoes what they changed on the machine: kubelets first (so nothing
 * restarts containers), then every process in the nodes' cgroups, containerd and its shims,
 * kube-proxy's rules, mounts, cgroups, and finally the bridge, firewall, sysctl and host paths.
 * `strayGroups` are the process groups of the cluster's daemons found by their command lines
 * (containerd's shims among them).
 */
export async function stopRealNodes(
  paths: ClusterPaths,
  state: ClusterState | undefined,
  strayGroups: number[],
): Promise<void> {
  const real = state?.real;
  const recorded = Object.entries(real?.pids ?? {}).filter(([, pid]) => namesDir(pid, paths.dir));
  const kubelets = recorded.filter(([k]) => k.startsWith("kubelet/"));
  await stopGroups(kubelets.map(([, pid]) => pid));
  for (let i = 0; i < (real?.count ?? 0); i++) await removeCgroups(cgroupRoot(realNodeName(i)));
  await stopGroups([...recorded.map(([, pid]) => pid), ...strayGroups]);
  if (real && state) {
    await run(join(state.binDir, "kube-proxy"), ["--cleanup"]).catch(() => "");
  }
  await unmountUnder(paths.dir);
  if (real) await restoreHost(paths.dir, real.host);
}
