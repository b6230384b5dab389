// The operator as a separate OS process (`deno run mod.ts`), the way it runs in production: its own
// health/metrics port, its own log, and a real SIGKILL. Used by the e2e tests and the benchmarks.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { compilePermissions } from "../hack/permissions.ts";
import { CpuProfiler, inspectorUrl } from "./cpu_profile.ts";
import { parseMetrics, type Sample } from "./metrics_text.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The permissions `deno task compile` of the checkout at `root` gives the operator (nothing more),
 * and its V8 flags, so that the e2e tests and the benchmarks measure the process the image runs.
 */
function permissionsOf(root: string): string[] {
  return compilePermissions(Deno.readTextFileSync(join(root, "deno.json")));
}
/** Linux reports utime/stime in USER_HZ ticks, 100 per second on every mainstream architecture. */
const CLOCK_TICKS_PER_SECOND = 100;
const LOG_LINES_KEPT = 400;

export interface OperatorProcessOptions {
  kubeconfig: string;
  /** --namespaces: the namespaces it watches (all when empty). */
  namespaces?: string[];
  concurrency?: number;
  /** Extra flags, e.g. ["--resync-period=0"]. */
  args?: string[];
  /** Echo the operator's log lines to stderr (for debugging). */
  echo?: boolean;
  /** Open V8's inspector on a free loopback port, for `profiler()` (testing/cpu_profile.ts). */
  inspect?: boolean;
  /** V8 flags instead of the compile task's (a benchmark's experiment), e.g. "--max-semi-space-size=8". */
  v8Flags?: string;
  /**
   * The checkout whose mod.ts runs, with the permissions of its deno.json; default this one. The
   * upgrade test runs the previous release's from an extracted copy.
   */
  root?: string;
}

/**
 * The kubeconfig as JSON, written beside it (its relative certificate paths stay valid). In a
 * cluster the operator reads ServiceAccount credentials and never loads the YAML parser (an npm
 * module, which costs a Deno process about 11 MiB of resident memory); a JSON kubeconfig gives the
 * process measured here the same footprint.
 */
function jsonKubeconfig(path: string): string {
  const out = `${path}.json`;
  Deno.writeTextFileSync(out, JSON.stringify(parseYaml(Deno.readTextFileSync(path))));
  return out;
}

/** One run of the operator process; `restart()` gives a fresh one with the same options. */
export class OperatorProcess {
  readonly opts: OperatorProcessOptions;
  readonly #child: Deno.ChildProcess;
  readonly #spawnedAt: number;
  readonly #lines: string[] = [];
  readonly #logDone: Promise<void>;
  #port: Promise<number>;
  #inspector?: string;
  #exited?: Deno.CommandStatus;
  readonly status: Promise<Deno.CommandStatus>;

  private constructor(opts: OperatorProcessOptions) {
    this.opts = opts;
    const root = opts.root ?? ROOT;
    const permissions = permissionsOf(root);
    const args = [
      "run",
      ...(opts.v8Flags === undefined ? permissions : [
        ...permissions.filter((f) => !f.startsWith("--v8-flags=")),
        `--v8-flags=${opts.v8Flags}`,
      ]),
      ...(opts.inspect ? ["--inspect=127.0.0.1:0"] : []),
      join(root, "mod.ts"),
      `--kubeconfig=${jsonKubeconfig(opts.kubeconfig)}`,
      "--log-format=json",
      "--health-port=0",
      "--bind-address=127.0.0.1",
      ...(opts.namespaces?.length ? [`--namespaces=${opts.namespaces.join(",")}`] : []),
      ...(opts.concurrency ? [`--concurrency=${opts.concurrency}`] : []),
      ...(opts.args ?? []),
    ];
    this.#spawnedAt = performance.now();
    this.#child = new Deno.Command(Deno.execPath(), {
      args,
      cwd: root,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).spawn();
    let foundPort: (port: number) => void = () => {};
    let noPort: (e: Error) => void = () => {};
    this.#port = new Promise<number>((resolve, reject) => {
      foundPort = resolve;
      noPort = reject;
    });
    this.#port.catch(() => {}); // observed by whoever asks for it
    this.#logDone = this.#readLog(foundPort);
    this.status = this.#child.status.then((s) => {
      this.#exited = s;
      return s;
    });
    // A process that dies before it serves never reports a port.
    this.status.then(() =>
      this.#logDone.then(() =>
        noPort(new Error(`operator exited before serving:\n${this.logTail(30)}`))
      )
    );
  }

  /** Spawns the operator; resolves once it serves /healthz (not yet synced: see `ready()`). */
  static async start(opts: OperatorProcessOptions): Promise<OperatorProcess> {
    const p = new OperatorProcess(opts);
    live.add(p);
    p.status.then(() => live.delete(p));
    try {
      await p.port();
    } catch (e) {
      await p.kill();
      throw e;
    }
    return p;
  }

  get pid(): number {
    return this.#child.pid;
  }

  get exited(): boolean {
    return this.#exited !== undefined;
  }

  /** The port of /healthz, /readyz and /metrics (from the operator's "serving" log line). */
  port(): Promise<number> {
    return this.#port;
  }

  async #readLog(foundPort: (port: number) => void): Promise<void> {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of this.#child.stderr) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        this.#lines.push(line);
        if (this.#lines.length > LOG_LINES_KEPT) this.#lines.shift();
        if (this.opts.echo) console.error(`[operator ${this.pid}] ${line}`);
        this.#inspector ??= inspectorUrl(line);
        const port = servingPort(line);
        if (port !== undefined) foundPort(port);
      }
    }
  }

  /** The last lines of the operator's log, for failure messages. */
  logTail(n = 40): string {
    return this.#lines.slice(-n).join("\n");
  }

  /** Every kept log line parsed as JSON (lines that are not JSON are skipped). */
  logRecords(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    for (const line of this.#lines) {
      try {
        out.push(JSON.parse(line));
      } catch {
        // not a log record (e.g. a Deno warning)
      }
    }
    return out;
  }

  async #get(path: string): Promise<{ status: number; body: string }> {
    const res = await fetch(`http://127.0.0.1:${await this.port()}${path}`, {
      signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, body: await res.text() };
  }

  /**
   * Waits until /readyz answers 200 (every cache synced); resolves the milliseconds from spawn to
   * that moment, the operator's start-up time.
   */
  async ready(timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.exited) throw new Error(`operator exited:\n${this.logTail(30)}`);
      const ok = await this.#get("/readyz").then((r) => r.status === 200, () => false);
      if (ok) return performance.now() - this.#spawnedAt;
      if (Date.now() > deadline) {
        throw new Error(`operator not ready after ${timeoutMs} ms:\n${this.logTail(30)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Its /metrics, parsed. */
  async metrics(): Promise<Sample[]> {
    return parseMetrics(await this.metricsText());
  }

  /** Its /metrics as served. */
  async metricsText(): Promise<string> {
    const r = await this.#get("/metrics");
    if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
    return r.body;
  }

  /** A CPU profiler attached to the process (started with `inspect`). */
  profiler(): Promise<CpuProfiler> {
    if (!this.#inspector) throw new Error("the operator was not started with inspect");
    return CpuProfiler.connect(this.#inspector);
  }

  /** Resident set size in bytes (VmRSS of /proc/<pid>/status). */
  rssBytes(): number {
    return readRssBytes(this.pid);
  }

  /**
   * The resident memory split: `anon` is the process's own (heap, stacks, buffers: what grows with
   * the objects it holds); `file` is mapped file pages, nearly all the Deno executable's code,
   * shared with the page cache and reclaimable under pressure.
   */
  rssSplit(): { anonBytes: number; fileBytes: number } {
    return parseRssSplit(Deno.readTextFileSync(`/proc/${this.pid}/status`));
  }

  /** CPU time consumed so far (utime + stime of /proc/<pid>/stat). */
  cpuSeconds(): number {
    return readCpuSeconds(this.pid);
  }

  /** SIGKILL: no drain, no goodbye. Resolves once the process is gone and its log is read. */
  async kill(): Promise<void> {
    if (!this.exited) {
      try {
        this.#child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
    await this.status;
    await this.#logDone;
  }

  /** SIGTERM and wait for the clean shutdown (SIGKILL after `timeoutMs`); resolves the exit code. */
  async stop(timeoutMs = 30_000): Promise<number> {
    if (!this.exited) {
      try {
        this.#child.kill("SIGTERM");
      } catch {
        // already gone
      }
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<"timeout">((r) => {
      timer = setTimeout(() => r("timeout"), timeoutMs);
    });
    const outcome = await Promise.race([this.status, timedOut]);
    clearTimeout(timer);
    if (outcome === "timeout") await this.kill();
    await this.#logDone;
    return (await this.status).code;
  }

  /** A new process with the same options (after `kill()` or `stop()`). */
  async restart(): Promise<OperatorProcess> {
    if (!this.exited) await this.kill();
    return await OperatorProcess.start(this.opts);
  }
}

/** Operators still running; SIGKILLed when this process exits so none outlives its test or bench. */
const live = new Set<OperatorProcess>();
globalThis.addEventListener("unload", () => {
  for (const p of live) {
    try {
      Deno.kill(p.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/** The port in the operator's "serving /healthz, /readyz and /metrics" log record, if it is one. */
export function servingPort(line: string): number | undefined {
  if (!line.includes("/metrics")) return undefined;
  try {
    const rec = JSON.parse(line);
    const address = String(rec.address ?? "");
    const port = Number(address.slice(address.lastIndexOf(":") + 1));
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

/** VmRSS of a process, in bytes. */
export function readRssBytes(pid: number): number {
  return parseVmRss(Deno.readTextFileSync(`/proc/${pid}/status`));
}

/** VmRSS in bytes from the text of /proc/<pid>/status. */
export function parseVmRss(status: string): number {
  const kb = statusKb(status, "VmRSS");
  if (kb === undefined) throw new Error("no VmRSS line");
  return kb * 1024;
}

/** A "<field>: <n> kB" line of /proc/<pid>/status, in kB; undefined when absent. */
function statusKb(status: string, field: string): number | undefined {
  const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(status);
  return m ? Number(m[1]) : undefined;
}

/** RssAnon and RssFile (+ RssShmem, counted as anonymous) in bytes from /proc/<pid>/status. */
export function parseRssSplit(status: string): { anonBytes: number; fileBytes: number } {
  const kb = (field: string) => statusKb(status, field) ?? 0;
  return { anonBytes: (kb("RssAnon") + kb("RssShmem")) * 1024, fileBytes: kb("RssFile") * 1024 };
}

/** utime + stime of a process, in seconds. */
export function readCpuSeconds(pid: number): number {
  return parseCpuSeconds(Deno.readTextFileSync(`/proc/${pid}/stat`));
}

/** utime + stime in seconds from the text of /proc/<pid>/stat (fields 14 and 15). */
export function parseCpuSeconds(stat: string): number {
  // The command name (field 2) may hold spaces and parentheses: count from the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state), so field n is fields[n - 3].
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  return (utime + stime) / CLOCK_TICKS_PER_SECOND;
}
