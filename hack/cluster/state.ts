// The on-disk record of a local cluster: which processes run, on which ports, with which
// binaries. Everything `down` must undo is written here before it happens, so an interrupted
// `up` can always be cleaned up.

import { join, resolve } from "node:path";
import type { HostRecord } from "./host.ts";
import type { ContainerRuntime } from "./container_runtime.ts";

export const COMPONENTS = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kwok",
] as const;
export type ComponentName = typeof COMPONENTS[number];

/** Components that make a control plane; the rest only run in a full cluster. */
export const CONTROL_PLANE: readonly ComponentName[] = ["etcd", "kube-apiserver"];

export type ClusterMode = "full" | "control-plane-only";

export interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
}

export interface ClusterState {
  binDir: string;
  /**
   * What the binaries report (`kube-apiserver --version`); absent in a state written before it
   * was recorded, then read from the binaries when the cluster is reused.
   */
  kubernetesVersion?: string;
  ports: Ports;
  mode: ClusterMode;
  nodes: number;
  /** Process (and process group) ids of the components started so far. */
  pids: Partial<Record<ComponentName, number>>;
  /**
   * What each running component was started with (command line, plus KWOK's stage file): a
   * reused cluster restarts a component whose fingerprint no longer matches this checkout.
   */
  fingerprints?: Partial<Record<ComponentName, string>>;
  /** Real nodes (kubelet + containerd) beside the KWOK ones, when `up --real-nodes N` ran. */
  real?: RealNodesState;
  /** Extra kube-apiserver flags given to `up` (kept, so a restart starts it the same way). */
  apiserverArgs?: string[];
  /** The Kueue version `up --kueue` installed (hack/cluster/kueue.ts). */
  kueue?: string;
  /** The metrics-server version `up --metrics` installed (hack/cluster/metrics_server.ts). */
  metricsServer?: string;
  /** The KEDA version `up --keda` installed (hack/cluster/keda.ts). */
  keda?: string;
  startedAt: string;
}

/** The real nodes' part of the state; `host` is recorded before the machine is changed. */
export interface RealNodesState {
  count: number;
  host: HostRecord;
  /** What the nodes run their containers with; absent in a state from before: Debian's. */
  runtime?: ContainerRuntime;
  /** Process group ids by daemon: "containerd/<node>", "kubelet/<node>", "kube-proxy". */
  pids: Record<string, number>;
  ports: {
    kubelet: number[];
    kubeletHealthz: number[];
    proxyHealthz: number;
    proxyMetrics: number;
  };
}

/** Where each artefact of a cluster lives inside its state directory. */
export class ClusterPaths {
  readonly dir: string;
  constructor(dir: string) {
    this.dir = resolve(dir);
  }
  get state() {
    return join(this.dir, "state.json");
  }
  get kubeconfig() {
    return join(this.dir, "kubeconfig");
  }
  get pki() {
    return join(this.dir, "pki");
  }
  get etcdData() {
    return join(this.dir, "etcd-data");
  }
  get kwokConfig() {
    return join(this.dir, "kwok-stages.yaml");
  }
  /**
   * The apiserver audit policy `up --audit-policy` copies here; it turns the audit log on (`auditLog`): the
   * benchmark counts each operator's requests from it (`deno task bench --peer`).
   */
  get auditPolicy() {
    return join(this.dir, "audit-policy.yaml");
  }
  get auditLog() {
    return join(this.dir, "logs", "audit.log");
  }
  log(component: ComponentName) {
    return join(this.dir, "logs", `${component}.log`);
  }
  get logs() {
    return join(this.dir, "logs");
  }
  /** A real node's directory: containerd's root and state, the kubelet's root, CNI, configs. */
  node(name: string) {
    return join(this.dir, "nodes", name);
  }
  daemonLog(name: string) {
    return join(this.dir, "logs", `${name.replace("/", "-")}.log`);
  }
  /**
   * The record of a process that belongs to the cluster without being a component (the demo's
   * operator): `down` stops the process group of every `*.pid` record in the directory.
   */
  processRecord(name: string) {
    return join(this.dir, `${name}${PROCESS_RECORD}`);
  }
}

/** File name suffix of the records of `ClusterPaths.processRecord`. */
export const PROCESS_RECORD = ".pid";

export async function readState(paths: ClusterPaths): Promise<ClusterState | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(paths.state)) as ClusterState;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** Written through a rename so a reader never sees half a file. */
export async function writeState(paths: ClusterPaths, state: ClusterState): Promise<void> {
  const tmp = `${paths.state}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(state, null, 2) + "\n");
  await Deno.rename(tmp, paths.state);
}
