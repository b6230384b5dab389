// Which processes belong to a local cluster (its components, daemons started from its directory,
// processes recorded with it such as the demo's operator) and stopping them: `down`, and
// `downSync` for unload handlers.

import { join } from "node:path";
import {
  type DaemonSpec,
  groupMembers,
  namesDir,
  recordedProcess,
  spawnDaemon,
  stopGroups,
  writeProcessRecord,
} from "./processes.ts";
import { bridgeOwner } from "./host.ts";
import { stopRealNodes } from "./real_nodes.ts";
import { BRIDGE } from "./real_node_config.ts";
import { ClusterPaths, type ClusterState, COMPONENTS, PROCESS_RECORD, readState } from "./state.ts";

const log = (msg: string) => console.error(`[cluster] ${msg}`);

const REAL_NODE_DAEMONS = ["kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2"];
/** Binaries whose processes belong to a cluster when their command line names its directory. */
const CLUSTER_BINARIES: readonly string[] = [...COMPONENTS, ...REAL_NODE_DAEMONS];

/**
 * Process groups of components (by binary name) whose command line mentions `dir`: all of ours
 * do, also those an interrupted `up` started but did not record, and containerd's shims. Other
 * programs pointed at the cluster (kubectl, an operator) are left alone.
 */
function groupsReferencing(dir: string, binaries = CLUSTER_BINARIES): number[] {
  const groups = new Set<number>();
  for (const entry of Deno.readDirSync("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid) || pid === Deno.pid) continue;
    try {
      const args = Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0");
      const binary = (args[0] ?? "").split("/").pop() ?? "";
      if (binaries.includes(binary) && args.some((a) => a.includes(`${dir}/`))) {
        const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
        const pgrp = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
        // Only groups that lead their own session: our daemons, never the caller's shell.
        if (pgrp === pid) groups.add(pgrp);
      }
    } catch {
      // Exited while we looked.
    }
  }
  return [...groups];
}

/**
 * Starts a daemon that belongs to the cluster without being one of its components (the demo's
 * operator) and records it in the state directory (`<name>.pid`), so that `down` stops it with
 * the cluster. The process of an earlier record of that name is stopped first.
 */
export async function startRecorded(dir: string, name: string, spec: DaemonSpec): Promise<number> {
  const paths = new ClusterPaths(dir);
  const file = paths.processRecord(name);
  const previous = readRecord(paths, file);
  if (previous !== undefined) {
    log(`stopping the previous ${name} (pid ${previous})`);
    await stopGroups([previous], 30_000);
  }
  const pid = spawnDaemon(spec);
  await writeProcessRecord(file, pid);
  return pid;
}

/** Stops the process recorded by `startRecorded(dir, name)`, if it runs, and forgets it. */
export async function stopRecorded(dir: string, name: string): Promise<void> {
  const paths = new ClusterPaths(dir);
  const file = paths.processRecord(name);
  const pid = readRecord(paths, file);
  if (pid !== undefined) await stopGroups([pid], 30_000);
  await Deno.remove(file).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}

function readRecord(paths: ClusterPaths, file: string): number | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(file);
  } catch {
    return undefined;
  }
  // A bare pid (the demo before records had a start time) counts only for a process whose
  // command line names this cluster, as the demo's operator does with its kubeconfig path.
  return recordedProcess(text, (pid) => namesDir(pid, paths.dir));
}

/** The live process groups recorded by `startRecorded` in the state directory. */
export function recordedGroups(dir: string): number[] {
  const paths = new ClusterPaths(dir);
  const groups: number[] = [];
  try {
    for (const entry of Deno.readDirSync(paths.dir)) {
      if (!entry.isFile || !entry.name.endsWith(PROCESS_RECORD)) continue;
      const pid = readRecord(paths, join(paths.dir, entry.name));
      if (pid !== undefined) groups.push(pid);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return groups;
}

/**
 * The process groups `down` stops: the components' recorded ones plus any stray daemon of this dir,
 * and the processes recorded by `startRecorded`.
 */
export function clusterGroups(dir: string, state: ClusterState | undefined): number[] {
  const absolute = new ClusterPaths(dir).dir;
  const components = Object.values(state?.pids ?? {}).filter((p) =>
    groupMembers(p).length > 0 && namesDir(p, absolute)
  );
  return [
    ...new Set([
      ...recordedGroups(dir),
      ...components,
      ...groupsReferencing(new ClusterPaths(dir).dir),
    ]),
  ];
}

export async function down(dir: string, opts: { quiet?: boolean } = {}): Promise<void> {
  const paths = new ClusterPaths(dir);
  const state = await readState(paths).catch(() => undefined);
  // What runs against the cluster (the demo's operator) stops first, while the API still answers.
  const extra = recordedGroups(dir);
  await stopGroups(extra, 30_000); // the operator drains its reconciles for at most 25 s
  // Then real nodes: their containers, mounts and host changes.
  await stopRealNodes(paths, state, groupsReferencing(paths.dir, REAL_NODE_DAEMONS));
  const groups = clusterGroups(dir, state);
  await stopGroups(groups);
  await Deno.remove(paths.dir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  if (!opts.quiet) {
    log(`stopped ${new Set([...extra, ...groups]).size} processes; removed ${paths.dir}`);
  }
}

/**
 * Frees the real-node bridge for `owner` when it belongs to another cluster directory none of
 * whose processes runs any more: its session ended without `down` (the machine's processes were
 * stopped, the bridge and host changes stayed). That cluster is torn down as `down` would; a live
 * one is left alone, and `up` refuses with the command to run.
 */
export async function downStaleBridgeOwner(owner: string): Promise<void> {
  const other = await bridgeOwner();
  if (!other || other === new ClusterPaths(owner).dir) return;
  if (clusterGroups(other, undefined).length > 0) return;
  log(`the bridge ${BRIDGE} belongs to ${other}, none of whose processes runs: tearing it down`);
  await down(other, { quiet: true });
}

/** Synchronous `down` for `unload` handlers: SIGKILL, then remove the directory. */
export function downSync(dir: string): void {
  const paths = new ClusterPaths(dir);
  let state: ClusterState | undefined;
  try {
    state = JSON.parse(Deno.readTextFileSync(paths.state));
  } catch {
    state = undefined;
  }
  const groups = clusterGroups(dir, state);
  for (const g of groups) {
    try {
      Deno.kill(-g, "SIGKILL");
    } catch {
      // gone
    }
  }
  const deadline = Date.now() + 5000;
  while (groups.some((g) => groupMembers(g).length > 0) && Date.now() < deadline) {
    // Busy-wait: unload handlers cannot await, and SIGKILL takes milliseconds.
  }
  try {
    Deno.removeSync(paths.dir, { recursive: true });
  } catch {
    // Already gone.
  }
}
