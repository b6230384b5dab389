// Daemons of the local cluster. Each component runs in its own session (so its own process
// group, pgid == pid): `down` signals the whole group and so leaves no orphans, and the
// processes outlive the `deno task cluster up` that started them. Output goes to a log file
// through a `sh -c 'exec ...'` shim, so the recorded pid is the component's own.

export interface DaemonSpec {
  binary: string;
  args: string[];
  logFile: string;
  cwd?: string;
}

export function spawnDaemon(spec: DaemonSpec): number {
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", 'exec "$@" >>"$0" 2>&1 </dev/null', spec.logFile, spec.binary, ...spec.args],
    cwd: spec.cwd,
    detached: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  child.unref();
  return child.pid;
}

interface ProcStat {
  state: string;
  pgrp: number;
  /** Clock ticks after boot at which the process started: with the pid, it names one process. */
  startTime: string;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The command name (field 2) may contain spaces and parentheses: split after the last ")".
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: rest[0], pgrp: Number(rest[2]), startTime: rest[19] };
  } catch {
    return undefined;
  }
}

/** The command line of `pid` (empty once it has exited). */
export function cmdline(pid: number): string[] {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").filter((s) => s !== "");
  } catch {
    return [];
  }
}

/**
 * Whether `pid` runs with the absolute directory `dir` on its command line, as every process of a
 * local cluster does: a recorded pid that the kernel has since given to another process (the
 * machine restarted, or the session that started the cluster ended and took its processes along)
 * is not ours to stop.
 */
export function namesDir(pid: number, dir: string): boolean {
  return cmdline(pid).some((a) => a.includes(`${dir}/`));
}

/**
 * Whether `pid` is still the live process we started: it exists, is not a zombie, and runs
 * `binary` (guards against pid reuse after a reboot or a long pause).
 */
export function isRunning(pid: number, binary: string): boolean {
  const stat = readStat(pid);
  if (!stat || stat.state === "Z" || stat.state === "X") return false;
  const argv = cmdline(pid);
  // Mid-exec the kernel has installed the new image but not yet its arguments, so cmdline
  // reads empty; loading a big binary from a cold page cache makes that window long enough
  // to be seen (a first `cluster up` once reported "kube-apiserver exited" with an empty log).
  if (argv.length === 0) return true;
  const argv0 = argv[0];
  // Right after spawnDaemon the pid may still be the `sh -c 'exec ...'` shim (argv: sh, -c,
  // script, logFile, binary, ...): it is about to become `binary`, so it counts as running.
  if (argv0 === "/bin/sh" && argv[1] === "-c" && argv[4] === binary) return true;
  return argv0 === binary || argv0.endsWith(`/${binary.split("/").pop()}`);
}

/** What `pid` is now, in one line for an error message: its state and command line. */
export function describeProcess(pid: number): string {
  const stat = readStat(pid);
  if (!stat) return `pid ${pid}: no such process`;
  const argv = cmdline(pid).join(" ");
  return `pid ${pid}: state ${stat.state}, ${
    argv ? `running ${argv.slice(0, 200)}` : "no command line"
  }`;
}

/**
 * Tells when a daemon spawned moments ago has exited, for waits that fail early instead of timing
 * out. Only the kernel's view of the pid counts (gone, or a zombie): the pid cannot have been given
 * to another process yet, and its command line passes through the shim and an empty window during
 * exec, which a check of the binary must allow for. One observation is not enough: a single poll
 * once reported a containerd as exited that then booted normally under the same pid, so an exit is
 * believed when two polls in a row see it.
 */
export class ExitWatch {
  #misses = new Map<number, number>();

  /** Whether `pid` has now been seen gone twice in a row (consecutive calls). */
  exited(pid: number): boolean {
    const stat = readStat(pid);
    const gone = !stat || stat.state === "Z" || stat.state === "X";
    const misses = gone ? (this.#misses.get(pid) ?? 0) + 1 : 0;
    this.#misses.set(pid, misses);
    return misses >= 2;
  }

  /**
   * For a daemon recorded as `pid` (undefined: never started): what was seen of it once it has
   * exited (`exited`), for the error; undefined while it runs.
   */
  exitSeen(pid: number | undefined): string | undefined {
    if (pid === undefined) return "never started";
    return this.exited(pid) ? describeProcess(pid) : undefined;
  }
}

/**
 * A record of a daemon (`spawnDaemon`) in a file: its pid on the first line, its start time on the
 * second, so that a pid the kernel has since given to another process is not taken for it.
 */
export async function writeProcessRecord(file: string, pid: number): Promise<void> {
  await Deno.writeTextFile(file, `${pid}\n${readStat(pid)?.startTime ?? ""}\n`);
}

/**
 * The pid of a record written by `writeProcessRecord` while that process still runs and leads its
 * process group; undefined otherwise. `legacy` decides for a record without a start time (a bare
 * pid file).
 */
export function recordedProcess(
  text: string,
  legacy: (pid: number) => boolean = () => false,
): number | undefined {
  const [pidLine, startTime] = text.split("\n").map((l) => l.trim());
  const pid = Number(pidLine);
  if (!/^\d+$/.test(pidLine ?? "") || pid <= 0) return undefined;
  const stat = readStat(pid);
  if (!stat || stat.state === "Z" || stat.state === "X" || stat.pgrp !== pid) return undefined;
  if (startTime) return stat.startTime === startTime ? pid : undefined;
  return legacy(pid) ? pid : undefined;
}

/** Live (non-zombie) processes whose process group is `pgid`. */
export function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid)) continue;
    const stat = readStat(pid);
    if (stat && stat.pgrp === pgid && stat.state !== "Z" && stat.state !== "X") members.push(pid);
  }
  return members;
}

function signalGroup(pgid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * SIGTERM to every group, then SIGKILL to whatever is left after `graceMs`. Resolves once no
 * member of any group is alive.
 */
export async function stopGroups(pgids: number[], graceMs = 5000): Promise<void> {
  for (const g of pgids) signalGroup(g, "SIGTERM");
  const deadline = Date.now() + graceMs;
  let alive = pgids.filter((g) => groupMembers(g).length > 0);
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    alive = alive.filter((g) => groupMembers(g).length > 0);
  }
  for (const g of alive) signalGroup(g, "SIGKILL");
  while (alive.length > 0) {
    await new Promise((r) => setTimeout(r, 20));
    alive = alive.filter((g) => groupMembers(g).length > 0);
  }
}
