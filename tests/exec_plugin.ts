/**
 * Credential plugin programs for tests (runtime/config/exec_credentials.ts runs them): a shell script in
 * the test's directory that records the pid of each run, and whether a run's process still exists.
 */
import { join } from "node:path";

/**
 * Writes `dir`/plugin.sh, executable: a shell script that appends its pid to `dir`/pids, then runs
 * `lines`. Returns its path.
 */
export async function writePlugin(dir: string, lines: readonly string[]): Promise<string> {
  const plugin = join(dir, "plugin.sh");
  await Deno.writeTextFile(
    plugin,
    ["#!/bin/sh", `echo $$ >> "${dir}/pids"`, ...lines].join("\n"),
  );
  await Deno.chmod(plugin, 0o755);
  return plugin;
}

/** The pids of the runs of `dir`'s plugin so far, in order (none before the first). */
export async function pluginRuns(dir: string): Promise<number[]> {
  try {
    return (await Deno.readTextFile(join(dir, "pids"))).trim().split("\n").map(Number);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
}

/** Whether process `pid` still exists (SIGCONT changes nothing for a process that runs). */
export function processExists(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}
