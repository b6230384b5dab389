/**
 * deno task test:unit — the unit tier (tests/unit/) under its time budget: it runs the tier, prints
 * its wall time and fails when the tier took longer than the budget, also when every test passed.
 * `./task test` (hack/test.ts, what CI runs) runs the unit tier through the same arguments and
 * budget.
 *
 *   deno run -A hack/test_unit.ts [deno test flags] [paths] [--budget-seconds=N]
 *
 * Flags go to deno test (`--filter x`); paths replace tests/unit/. The budget is the time a
 * developer waits for the tier on CI's machine (2 cores), type check included, so that it stays the
 * tier one runs after every change; `--budget-seconds` is for this runner's own tests.
 */

/** The unit tier's folder. */
export const UNIT_TIER = "tests/unit/";

/** The unit tier's budget: its wall time on CI's machine. */
export const UNIT_BUDGET_SECONDS = 60;

/**
 * deno test's arguments for the unit tier. Its files run in parallel, one per core: the tier waits
 * on child processes (bash and shellcheck running the generated scripts) and on timers as much as
 * it computes.
 */
export function unitTestArgs(flags: string[] = [], paths: string[] = [UNIT_TIER]): string[] {
  return ["test", "-A", "--parallel", ...flags, ...paths];
}

/** The line the runner prints, and whether the tier is over its budget. */
export function budgetVerdict(
  seconds: number,
  budget = UNIT_BUDGET_SECONDS,
): { line: string; over: boolean } {
  const over = seconds > budget;
  const took = `unit tier: ${seconds.toFixed(1)} s wall`;
  return over
    ? { line: `${took}, over its budget of ${budget} s`, over }
    : { line: `${took} (budget ${budget} s)`, over };
}

/** The runner's command line: deno test's flags, the paths and the budget. */
export function parseArgs(args: string[]): { flags: string[]; paths: string[]; budget: number } {
  const flags: string[] = [];
  const paths: string[] = [];
  let budget = UNIT_BUDGET_SECONDS;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const m = /^--budget-seconds=(.*)$/.exec(arg);
    if (m) {
      budget = Number(m[1]);
      if (!Number.isFinite(budget) || budget < 0) throw new Error(`bad budget: ${arg}`);
    } else if (arg.startsWith("-")) {
      flags.push(arg);
      // A flag's value given apart (`--filter x`) belongs to it, not to the paths.
      if (!arg.includes("=") && VALUED_FLAGS.has(arg) && i + 1 < args.length) flags.push(args[++i]);
    } else {
      paths.push(arg);
    }
  }
  return { flags, paths: paths.length > 0 ? paths : [UNIT_TIER], budget };
}

/** deno test's flags that take their value as the next argument. */
const VALUED_FLAGS = new Set(["--filter", "--reporter", "--junit-path"]);

async function main(): Promise<number> {
  const { flags, paths, budget } = parseArgs(Deno.args);
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: unitTestArgs(flags, paths),
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  // Passed on, so that ^C stops the tests rather than leaving them to run.
  const forward = (sig: Deno.Signal) => () => child.kill(sig);
  const handlers = (["SIGINT", "SIGTERM"] as const).map((sig) => {
    const handler = forward(sig);
    Deno.addSignalListener(sig, handler);
    return [sig, handler] as const;
  });
  const status = await child.status;
  for (const [sig, handler] of handlers) Deno.removeSignalListener(sig, handler);
  const verdict = budgetVerdict((performance.now() - t0) / 1000, budget);
  console.log(verdict.line);
  if (!status.success) return status.code || 1;
  return verdict.over ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main());
