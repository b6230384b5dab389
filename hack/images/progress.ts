/**
 * Progress on stderr and the commands behind it. Every line carries the seconds since the process
 * started; a step that runs long says every 20 s that it is alive (with the last line of its log),
 * and each finished step is recorded so that a build can store how long its parts took.
 */
const started = performance.now();
const HEARTBEAT_MS = 20_000;

function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}

export function log(message: string): void {
  console.error(`[images ${seconds(performance.now() - started)}s] ${message}`);
}

/** How long one step took, in seconds. */
export interface StepTiming {
  step: string;
  seconds: number;
}

/** Timings of the steps this process ran, in the order they ended. */
export const timings: StepTiming[] = [];

/** The log a long step writes into, whose last line the heartbeat shows. */
let currentLog: string | undefined;

async function lastLine(path: string): Promise<string> {
  try {
    using file = await Deno.open(path);
    const size = (await file.stat()).size;
    const length = Math.min(size, 4096);
    await file.seek(size - length, Deno.SeekMode.Start);
    const buffer = new Uint8Array(length);
    let read = 0;
    while (read < length) {
      const n = await file.read(buffer.subarray(read));
      if (n === null) break;
      read += n;
    }
    const lines = new TextDecoder().decode(buffer.subarray(0, read)).trimEnd().split("\n");
    return (lines.at(-1) ?? "").slice(0, 160);
  } catch {
    return "";
  }
}

/** Runs `fn` as a named step: logs its start and end and, while it runs, a heartbeat. */
export async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const begin = performance.now();
  log(`${name} ...`);
  const timer = setInterval(async () => {
    const tail = currentLog ? await lastLine(currentLog) : "";
    log(`  ... ${name}: ${seconds(performance.now() - begin)} s${tail ? ` | ${tail}` : ""}`);
  }, HEARTBEAT_MS);
  try {
    const result = await fn();
    const took = (performance.now() - begin) / 1000;
    timings.push({ step: name, seconds: Math.round(took * 10) / 10 });
    log(`${name}: done in ${took.toFixed(1)} s`);
    return result;
  } finally {
    clearInterval(timer);
  }
}

export interface RunOptions {
  cwd?: string;
  /** Extra environment for the command. */
  env?: Record<string, string>;
  /** Append the command's output to this file instead of this process's stderr. */
  logFile?: string;
}

/** Runs a command to completion; throws with the end of its log if it fails. */
export async function run(cmd: string[], opts: RunOptions = {}): Promise<void> {
  const [program, ...args] = cmd;
  if (!opts.logFile) {
    const status = await new Deno.Command(program, {
      args,
      cwd: opts.cwd,
      env: opts.env,
      stdin: "null",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn().status;
    if (!status.success) throw new Error(`${cmd.join(" ")} exited with ${status.code}`);
    return;
  }
  using file = await Deno.open(opts.logFile, { create: true, append: true });
  await file.write(new TextEncoder().encode(`$ ${cmd.join(" ")}\n`));
  const child = new Deno.Command(program, {
    args,
    cwd: opts.cwd,
    env: opts.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const previousLog = currentLog;
  currentLog = opts.logFile;
  try {
    // Both streams into one file, in arrival order.
    const copy = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) await file.write(chunk);
    };
    const [status] = await Promise.all([child.status, copy(child.stdout), copy(child.stderr)]);
    if (!status.success) {
      const text = await Deno.readTextFile(opts.logFile);
      const tail = text.trimEnd().split("\n").slice(-30).join("\n");
      throw new Error(
        `${cmd.join(" ")} exited with ${status.code} (log: ${opts.logFile})\n${tail}`,
      );
    }
  } finally {
    currentLog = previousLog;
  }
}

/** Runs a command and returns its standard output. */
export async function output(cmd: string[], opts: { cwd?: string } = {}): Promise<string> {
  const [program, ...args] = cmd;
  const out = await new Deno.Command(program, {
    args,
    cwd: opts.cwd,
    stdin: "null",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`${cmd.join(" ")} exited with ${out.code}`);
  return new TextDecoder().decode(out.stdout);
}
