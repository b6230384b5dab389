// up / down / status of a local cluster kept in one state directory.

import { join } from "node:path";
import { ApiConnection, waitFor } from "./api.ts";
import { ensureBinaries } from "./binaries.ts";
import { componentArgs, type ComponentContext, KUBERNETES_SERVICE_IP } from "./components.ts";
import { renderKubeconfig } from "./kubeconfig.ts";
import { binariesVersion } from "./kubernetes_version.ts";
import { renderKwokConfig } from "./kwok_stages.ts";
import { fakeNode, fakeNodeName } from "./nodes.ts";
import { createPki, ensureFrontProxyPki, pkiFiles } from "./pki.ts";
import { freeLoopbackPorts } from "./ports.ts";
import { ExitWatch, isRunning, spawnDaemon, stopGroups } from "./processes.ts";
import { down, downStaleBridgeOwner } from "./teardown.ts";
import {
  preflight,
  prepareHost,
  realNodeDaemons,
  type RealNodeImages,
  runtimeOf,
  startRealNodes,
} from "./real_nodes.ts";
import {
  type ContainerRuntime,
  DEFAULT_CONTAINER_RUNTIME,
  runtimeBuilds,
} from "./container_runtime.ts";
import { REAL_NODE_BINARIES, realNodeImages } from "./real_node_images.ts";
import { realNodeName } from "./real_node_config.ts";
import { installKeda, KEDA_VERSION } from "./keda.ts";
import { installKueue, KUEUE_VERSION } from "./kueue.ts";
import { installMetricsServer, METRICS_SERVER_VERSION } from "./metrics_server.ts";
import {
  type ClusterMode,
  ClusterPaths,
  type ClusterState,
  type ComponentName,
  COMPONENTS,
  CONTROL_PLANE,
  readState,
  writeState,
} from "./state.ts";

// Stopping a cluster and the processes recorded with it lives in teardown.ts.
export {
  clusterGroups,
  down,
  downSync,
  recordedGroups,
  startRecorded,
  stopRecorded,
} from "./teardown.ts";

export interface UpOptions {
  dir: string;
  mode: ClusterMode;
  nodes: number;
  /** Real nodes (kubelet + containerd) to run beside the KWOK ones; needs mode "full". */
  realNodes?: number;
  /** Extra kube-apiserver flags (a fresh cluster only; a reused one keeps its own). */
  apiserverArgs?: string[];
  /** An apiserver audit policy file, copied into the new cluster's directory (ClusterPaths). */
  auditPolicy?: string;
  /** Install Kueue (kueue.ts) and wait for its webhooks; needs a real node. */
  kueue?: boolean;
  /** Install metrics-server (metrics_server.ts) and wait for node metrics; needs a real node. */
  metrics?: boolean;
  /** Install KEDA (keda.ts) and wait for its external metrics API; needs a real node. */
  keda?: boolean;
  /**
   * The real nodes' container runtime (container_runtime.ts); unset: what a running cluster's
   * nodes run, else containerd 2.
   */
  containerd?: ContainerRuntime;
}

const log = (msg: string) => console.error(`[cluster] ${msg}`);
const since = (t0: number) => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

function componentsOf(mode: ClusterMode): readonly ComponentName[] {
  return mode === "full" ? COMPONENTS : CONTROL_PLANE;
}

function bin(state: ClusterState, name: ComponentName): string {
  return join(state.binDir, name);
}

function running(state: ClusterState, name: ComponentName): boolean {
  const pid = state.pids[name];
  return pid !== undefined && isRunning(pid, bin(state, name));
}

async function connect(paths: ClusterPaths, state: ClusterState): Promise<ApiConnection> {
  const pki = pkiFiles(paths.pki);
  const read = (p: string) => Deno.readTextFile(p);
  return new ApiConnection(`https://127.0.0.1:${state.ports.apiserver}`, {
    caCert: await read(pki.caCert),
    clientCert: await read(pki.adminCert),
    clientKey: await read(pki.adminKey),
  });
}

/** What the components of a recorded cluster are started with (see components.ts). */
export function componentContext(paths: ClusterPaths, state: ClusterState): ComponentContext {
  if (!state.kubernetesVersion) throw new Error(`no Kubernetes version recorded in ${paths.state}`);
  return {
    bin: (name) => bin(state, name),
    ports: state.ports,
    pki: pkiFiles(paths.pki),
    kubeconfig: paths.kubeconfig,
    etcdDataDir: paths.etcdData,
    kwokConfig: paths.kwokConfig,
    kubernetesVersion: state.kubernetesVersion,
    realNodes: state.real !== undefined,
    apiserverArgs: state.apiserverArgs,
    audit: fileExists(paths.auditPolicy)
      ? { policy: paths.auditPolicy, log: paths.auditLog }
      : undefined,
  };
}

function fileExists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

async function tail(file: string, lines = 15): Promise<string> {
  const text = await Deno.readTextFile(file).catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

function fingerprint(name: ComponentName, binary: string, args: string[]): string {
  return JSON.stringify([binary, ...args, ...(name === "kwok" ? [renderKwokConfig()] : [])]);
}

/**
 * Starts the components of `names` that do not run yet, and restarts those started with another
 * command line or stage file than this checkout would use (so a reused cluster picks up fixes).
 * Each pid is recorded before anything waits on it.
 */
async function startMissing(
  paths: ClusterPaths,
  state: ClusterState,
  names: readonly ComponentName[],
): Promise<ComponentName[]> {
  state.kubernetesVersion ??= await binariesVersion(state.binDir);
  const ctx = componentContext(paths, state);
  const started: ComponentName[] = [];
  state.fingerprints ??= {};
  for (const name of names) {
    const args = componentArgs(name, ctx);
    const wanted = fingerprint(name, bin(state, name), args);
    if (running(state, name)) {
      const recorded = state.fingerprints[name];
      if (recorded === wanted) continue;
      // A cluster from before fingerprints: its clients would notice an apiserver restart.
      if (recorded === undefined && CONTROL_PLANE.includes(name)) {
        state.fingerprints[name] = wanted;
        continue;
      }
      log(`restarting ${name}: its configuration changed`);
      await stopGroups([state.pids[name]!]);
    }
    if (name === "kwok") await Deno.writeTextFile(paths.kwokConfig, renderKwokConfig());
    state.pids[name] = spawnDaemon({
      binary: bin(state, name),
      args,
      logFile: paths.log(name),
      cwd: paths.dir,
    });
    state.fingerprints[name] = wanted;
    await writeState(paths, state);
    started.push(name);
  }
  return started;
}

/** Waits for `check`, failing early (with the log's tail) when a component exits. */
function waitHealthy(
  paths: ClusterPaths,
  state: ClusterState,
  watched: readonly ComponentName[],
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 90_000,
): Promise<void> {
  const watch = new ExitWatch();
  return waitFor(async () => {
    for (const name of watched) {
      const seen = watch.exitSeen(state.pids[name]);
      if (seen) throw new Error(`${name} exited (${seen}):\n${await tail(paths.log(name))}`);
    }
    return await check();
  }, {
    timeoutMs,
    describe: async () =>
      `timed out waiting for ${what}; last log lines:\n${
        (await Promise.all(watched.map(async (n) => `--- ${n}\n${await tail(paths.log(n), 5)}`)))
          .join("\n")
      }`,
  });
}

function binariesOf(opts: UpOptions, runtime: ContainerRuntime): readonly string[] {
  const real = (opts.realNodes ?? 0) > 0 ? [...REAL_NODE_BINARIES, ...runtimeBuilds(runtime)] : [];
  return [...componentsOf(opts.mode), ...real];
}

async function freshState(
  paths: ClusterPaths,
  opts: UpOptions,
  runtime: ContainerRuntime,
): Promise<ClusterState> {
  const binDir = await ensureBinaries(binariesOf(opts, runtime));
  await Deno.mkdir(paths.logs, { recursive: true });
  await Deno.mkdir(paths.pki, { recursive: true });
  const [etcdClient, etcdPeer, apiserver, controllerManager, scheduler] = freeLoopbackPorts(5);
  const state: ClusterState = {
    binDir,
    kubernetesVersion: await binariesVersion(binDir),
    ports: { etcdClient, etcdPeer, apiserver, controllerManager, scheduler },
    mode: opts.mode,
    nodes: opts.nodes,
    pids: {},
    ...(opts.apiserverArgs?.length ? { apiserverArgs: opts.apiserverArgs } : {}),
    startedAt: new Date().toISOString(),
  };
  await writeState(paths, state);
  const pki = await createPki(paths.pki, KUBERNETES_SERVICE_IP);
  const read = (p: string) => Deno.readTextFile(p);
  await Deno.writeTextFile(
    paths.kubeconfig,
    renderKubeconfig({
      server: `https://127.0.0.1:${apiserver}`,
      caCertPem: await read(pki.caCert),
      clientCertPem: await read(pki.adminCert),
      clientKeyPem: await read(pki.adminKey),
    }),
    { mode: 0o600 },
  );
  return state;
}

async function startControlPlane(paths: ClusterPaths, state: ClusterState): Promise<void> {
  const t0 = performance.now();
  await ensureFrontProxyPki(paths.pki);
  // etcd and the apiserver start together: the apiserver retries etcd until it answers.
  await startMissing(paths, state, CONTROL_PLANE);
  const api = await connect(paths, state);
  try {
    await waitHealthy(
      paths,
      state,
      CONTROL_PLANE,
      "kube-apiserver /readyz",
      () => api.ok("/readyz"),
    );
  } finally {
    api.close();
  }
  log(`control plane ready on https://127.0.0.1:${state.ports.apiserver} (${since(t0)})`);
}

interface NodeStatus {
  spec?: { taints?: { key: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

/** Ready, and the node lifecycle controller has lifted the not-ready taint: pods can land. */
function nodeSchedulable(node: NodeStatus | undefined): boolean {
  const ready = node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
  const tainted = node?.spec?.taints?.some((t) => t.key === "node.kubernetes.io/not-ready");
  return (ready ?? false) && !tainted;
}

async function startWorkers(paths: ClusterPaths, state: ClusterState, nodes: number) {
  const t0 = performance.now();
  const workers = COMPONENTS.filter((c) => !CONTROL_PLANE.includes(c));
  await startMissing(paths, state, workers);
  const api = await connect(paths, state);
  try {
    for (let i = 0; i < nodes; i++) await api.ensure("/api/v1/nodes", fakeNode(i));
    state.nodes = Math.max(state.nodes, nodes);
    await writeState(paths, state);
    const serving = (port: number) => async () => {
      // Their serving certificate is ours, so plain fetch with our CA can probe them.
      const probe = new ApiConnection(`https://127.0.0.1:${port}`, await credentials(paths));
      try {
        return await probe.ok("/healthz");
      } finally {
        probe.close();
      }
    };
    const nodeReady = async (i: number) =>
      nodeSchedulable(await api.getJson<NodeStatus>(`/api/v1/nodes/${fakeNodeName(i)}`));
    const all = [...CONTROL_PLANE, ...workers];
    await Promise.all([
      waitHealthy(
        paths,
        state,
        all,
        "kube-controller-manager",
        serving(state.ports.controllerManager),
      ),
      waitHealthy(paths, state, all, "kube-scheduler", serving(state.ports.scheduler)),
      waitHealthy(
        paths,
        state,
        all,
        "fake nodes Ready and untainted (KWOK, node lifecycle)",
        async () => {
          const ready = await Promise.all(Array.from({ length: nodes }, (_, i) => nodeReady(i)));
          return ready.every(Boolean);
        },
      ),
      // Pods cannot be admitted into a namespace before its default ServiceAccount exists.
      waitHealthy(
        paths,
        state,
        all,
        "default ServiceAccount",
        async () =>
          (await api.getJson(`/api/v1/namespaces/default/serviceaccounts/default`)) !== undefined,
      ),
    ]);
  } finally {
    api.close();
  }
  log(`controller manager, scheduler, KWOK and ${nodes} fake nodes ready (${since(t0)})`);
}

async function credentials(paths: ClusterPaths) {
  const pki = pkiFiles(paths.pki);
  const read = (p: string) => Deno.readTextFile(p);
  return {
    caCert: await read(pki.caCert),
    clientCert: await read(pki.adminCert),
    clientKey: await read(pki.adminKey),
  };
}

/**
 * Stops one worker component of a running cluster and starts it again from its recorded
 * configuration: a fresh process, holding none of the old one's in-memory state.
 */
export async function restartComponent(dir: string, name: ComponentName): Promise<void> {
  if (CONTROL_PLANE.includes(name)) throw new Error(`${name} is not restarted alone`);
  const paths = new ClusterPaths(dir);
  const state = await readState(paths);
  if (!state || !CONTROL_PLANE.every((n) => running(state, n))) {
    throw new Error(`no running cluster in ${dir}`);
  }
  const pid = state.pids[name];
  if (pid !== undefined && running(state, name)) await stopGroups([pid]);
  await startMissing(paths, state, [name]);
}

/** What `up` installs on a real node when asked, in this order, and how the state records it. */
const ADD_ONS: {
  option: "kueue" | "metrics" | "keda";
  name: string;
  version: string;
  /** Where the state records the version installed. */
  recorded: "kueue" | "metricsServer" | "keda";
  install(dir: string, kubeconfig: string, node: string, realNodes: number): Promise<void>;
}[] = [
  {
    option: "kueue",
    name: "Kueue",
    version: KUEUE_VERSION,
    recorded: "kueue",
    install: (dir, kubeconfig, node) => installKueue(dir, kubeconfig, node),
  },
  {
    option: "metrics",
    name: "metrics-server",
    version: METRICS_SERVER_VERSION,
    recorded: "metricsServer",
    install: installMetricsServer,
  },
  {
    option: "keda",
    name: "KEDA",
    version: KEDA_VERSION,
    recorded: "keda",
    install: (dir, kubeconfig, node) => installKeda(dir, kubeconfig, node),
  },
];

/**
 * The real nodes to start: those asked for, or one when an add-on is asked for (each runs on a
 * real node) and neither the options nor the running cluster have one.
 */
export function realNodesFor(opts: UpOptions, running: number): number {
  const asked = opts.realNodes ?? 0;
  const addOns = ADD_ONS.filter((a) => opts[a.option]);
  if (asked > 0 || running > 0 || addOns.length === 0) return asked;
  if (opts.mode !== "full") {
    throw new Error(`--${addOns[0].option} needs a real node, which --control-plane-only has not`);
  }
  log(`${addOns.map((a) => a.name).join(", ")} run on a real node: adding one (--real-nodes 1)`);
  return 1;
}

/** Brings the cluster up (or reuses/extends a running one); returns the kubeconfig path. */
export async function up(opts: UpOptions): Promise<string> {
  const t0 = performance.now();
  const paths = new ClusterPaths(opts.dir);
  let state = await readState(paths);
  const reused = state !== undefined && CONTROL_PLANE.every((n) => running(state!, n));
  const realNodes = realNodesFor(opts, reused ? state?.real?.count ?? 0 : 0);
  opts = { ...opts, realNodes };
  const runningRuntime = reused && state!.real ? runtimeOf(state!) : undefined;
  const runtime = opts.containerd ?? runningRuntime ?? DEFAULT_CONTAINER_RUNTIME;
  if (runningRuntime !== undefined && runningRuntime !== runtime) {
    throw new Error(
      `the real nodes in ${paths.dir} run containerd ${runningRuntime}, not ${runtime}: ` +
        `\`deno task cluster down\` first`,
    );
  }
  let images: RealNodeImages | undefined;
  if (realNodes > 0) {
    if (opts.mode !== "full") throw new Error("real nodes need a full cluster");
    // Everything slow or refusable comes before the machine or a running cluster is touched.
    await downStaleBridgeOwner(paths.dir);
    await preflight(paths.dir, runtime);
    images = await realNodeImages(ensureBinaries(binariesOf(opts, runtime)));
  }
  if (reused && state) {
    log(`reusing the cluster in ${paths.dir}`);
    if (realNodes > 0) await prepareHost(paths, state, runtime);
    // Restarts whatever this checkout would start differently, then waits for /readyz.
    await startControlPlane(paths, state);
  } else {
    if (state || await exists(paths.dir)) {
      log(`cleaning up a stale cluster in ${paths.dir}`);
      await down(opts.dir, { quiet: true });
    }
    state = await freshState(paths, opts, runtime);
    if (opts.auditPolicy) await Deno.copyFile(opts.auditPolicy, paths.auditPolicy);
    try {
      if (realNodes > 0) await prepareHost(paths, state, runtime);
      await startControlPlane(paths, state);
    } catch (e) {
      await down(opts.dir, { quiet: true });
      throw e;
    }
  }
  if (opts.mode === "full") {
    if (state.mode !== "full") {
      state.mode = "full";
      await writeState(paths, state);
    }
    await startWorkers(paths, state, opts.nodes);
  }
  if (state.real && (realNodes > 0 || state.real.count > 0)) {
    images ??= await realNodeImages(state.binDir);
    const api = await connect(paths, state);
    try {
      await startRealNodes(paths, state, api, realNodes, images, nodeSchedulable);
    } finally {
      api.close();
    }
  }
  for (const addOn of ADD_ONS.filter((a) => opts[a.option])) {
    if (!state.real || state.real.count === 0) {
      throw new Error(`--${addOn.option} runs ${addOn.name} on a real node: add --real-nodes 1`);
    }
    // The last real node: the first is where the disruption tests restart kubelet and containerd.
    const node = realNodeName(state.real.count - 1);
    const started = performance.now();
    await addOn.install(paths.dir, paths.kubeconfig, node, state.real.count);
    log(`${addOn.name} ${addOn.version} up in ${since(started)}`);
    state[addOn.recorded] = addOn.version;
    await writeState(paths, state);
  }
  log(`up in ${since(t0)}; logs in ${paths.logs}`);
  return paths.kubeconfig;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** Daemons of real nodes (containerd's shims among them). */
export interface ClusterStatus {
  dir: string;
  mode?: ClusterMode;
  kubeconfig?: string;
  /** Control plane, KWOK, and the real nodes' daemons ("kubelet/mc-real-0", ...). */
  components: { name: string; pid?: number; running: boolean }[];
  realNodes: { name: string; ready: boolean }[];
  /** Every daemon runs, the apiserver is ready, and so is every real node. */
  healthy: boolean;
}

export async function status(dir: string): Promise<ClusterStatus> {
  const paths = new ClusterPaths(dir);
  const state = await readState(paths);
  if (!state) return { dir: paths.dir, components: [], realNodes: [], healthy: false };
  const components = [
    ...componentsOf(state.mode).map((name) => ({
      name,
      pid: state.pids[name],
      running: running(state, name),
    })),
    ...realNodeDaemons(state),
  ];
  let healthy = components.every((c) => c.running);
  let realNodes: ClusterStatus["realNodes"] = [];
  if (healthy) {
    const api = await connect(paths, state);
    try {
      healthy = await api.ok("/readyz");
      realNodes = await Promise.all(
        Array.from({ length: state.real?.count ?? 0 }, (_, i) => realNodeName(i)).map(
          async (name) => ({
            name,
            ready: nodeSchedulable(await api.getJson<NodeStatus>(`/api/v1/nodes/${name}`)),
          }),
        ),
      );
      healthy &&= realNodes.every((n) => n.ready);
    } finally {
      api.close();
    }
  }
  return {
    dir: paths.dir,
    mode: state.mode,
    kubeconfig: paths.kubeconfig,
    components,
    realNodes,
    healthy,
  };
}
