// deno task test — the whole suite, as CI runs it (.ci/run):
//   shellcheck → Kubernetes binaries → Python SDK venv → deno task check → generated code up to date →
//   ./task demo from a clean state (its cluster: KWOK nodes and a real node, the local images) →
//   a second real node and Kueue added to its cluster →
//   deno test -A tests/ but the unit tier (every other tier of deno.json's test:* tasks: tooling,
//   integration, faults, e2e on KWOK, real/ on the two real nodes) with
//   MC_KUBECONFIG, MC_REAL_NODES=1 and MC_KUEUE=1 → the cluster stopped → the unit tier as
//   `deno task test:unit` runs it, timed against its budget (hack/test_unit.ts) on the machine the
//   cluster no longer loads → the differential conformance suite (its own control plane) →
//   deno.lock unchanged by all of it.
// A cluster this script starts is torn down at the end, also on failure or SIGINT/SIGTERM.
// Ends with the plain line "N passed, N failed": both deno test runs' counts plus one per step
// (the unit tier's budget is one).

import { join } from "node:path";
import { ensureBinaries } from "./cluster/binaries.ts";
import { COMPONENTS } from "./cluster/state.ts";
import { REAL_NODE_BINARIES } from "./cluster/real_node_images.ts";
import { DEFAULT_CONTAINER_RUNTIME, runtimeBuilds } from "./cluster/container_runtime.ts";
import { ensureImages } from "./images/images.ts";
import { ensureDebianPackages } from "./debian.ts";
import { down, status, stopRecorded, up } from "./cluster/lifecycle.ts";
import { stopGroups } from "./cluster/processes.ts";
import { demoOutputProblems } from "./demo.ts";
import { kubectl } from "./kubectl.ts";
import { pythonSdk } from "../testing/python_sdk.ts";
import { budgetVerdict, UNIT_TIER, unitTestArgs } from "./test_unit.ts";

const DENO = Deno.execPath();
const SHELL_SCRIPTS = [
  "task",
  ".ci/run",
  "hack/build-binaries.sh",
  "hack/images/chroot_run.sh",
  "hack/images/flux_build.sh",
  "hack/images/flux_view_check.sh",
  "hack/images/layer_tar.sh",
  "hack/images/mpi_layer.sh",
  "hack/images/mpi_check.sh",
  "hack/conformance/sandbox.sh",
  "hack/conformance/flux.sh",
];

interface StepResult {
  name: string;
  ok: boolean;
  seconds: number;
  note?: string;
}

const results: StepResult[] = [];
const say = (msg: string) => console.error(`\n[test] ${msg}`);

async function step(name: string, fn: () => Promise<string | void>): Promise<boolean> {
  say(`${name} ...`);
  const t0 = performance.now();
  try {
    const note = await fn();
    results.push({ name, ok: true, seconds: (performance.now() - t0) / 1000, note: note ?? "" });
    return true;
  } catch (e) {
    const note = e instanceof Error ? e.message : String(e);
    results.push({ name, ok: false, seconds: (performance.now() - t0) / 1000, note });
    say(`${name} FAILED: ${note}`);
    return false;
  }
}

async function run(cmd: string, args: string[], env?: Record<string, string>): Promise<void> {
  const out = await new Deno.Command(cmd, {
    args,
    env,
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} exited with ${out.code}`);
}

// Colour codes around the counts; intentional control character.
// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/** Counts from deno test's last summary line ("ok | 12 passed (3 steps) | 1 failed (2s)"). */
export function parseDenoTestSummary(
  output: string,
): { passed: number; failed: number } | undefined {
  const lines = output.replace(ANSI, "").split("\n").reverse();
  for (const line of lines) {
    const m = line.match(/^(?:ok|FAILED) \| (\d+) passed.*?\| (\d+) failed/);
    if (m) return { passed: Number(m[1]), failed: Number(m[2]) };
  }
  return undefined;
}

/**
 * What deno test printed for each failed test: its name line from the FAILURES section and the
 * first lines of its entry in the ERRORS section, so that the run's last screen names what failed
 * (CI shows only the end of the output).
 */
export function parseDenoTestFailures(output: string, linesEach = 6): string[] {
  const lines = output.replace(ANSI, "").split("\n");
  const errorsAt = lines.findIndex((l) => l.trim() === "ERRORS");
  const failuresAt = lines.findIndex((l, i) => i > errorsAt && l.trim() === "FAILURES");
  if (failuresAt < 0) return [];
  const failures: string[] = [];
  for (const line of lines.slice(failuresAt + 1)) {
    if (/^(?:ok|FAILED) \|/.test(line)) break;
    if (line.trim()) failures.push(line);
  }
  return failures.map((name) => {
    const at = errorsAt < 0 ? -1 : lines.indexOf(name, errorsAt);
    if (at < 0 || at > failuresAt) return name;
    const detail: string[] = [];
    for (const line of lines.slice(at + 1, failuresAt)) {
      if (!line.trim() || detail.length === linesEach) break;
      detail.push(`    ${line.trimEnd()}`);
    }
    return [name, ...detail].join("\n");
  });
}

/** Copies a child's output to ours as it comes, and returns all of it once the stream ends. */
async function echoed(stream: ReadableStream<Uint8Array>): Promise<string> {
  let output = "";
  const decoder = new TextDecoder();
  for await (const chunk of stream) {
    await Deno.stdout.write(chunk);
    output += decoder.decode(chunk, { stream: true });
  }
  return output + decoder.decode();
}

let testChild: Deno.ChildProcess | undefined;

/** Signals deno test and everything it spawned (it runs in its own process group). */
function signalTests(signal: Deno.Signal): void {
  if (!testChild) return;
  try {
    Deno.kill(-testChild.pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * The two runs of deno test that together cover tests/ once: every tier but the unit tier, on the
 * cluster, then the unit tier through its runner's arguments, timed against its budget.
 */
export const TEST_RUNS = {
  cluster: ["test", "-A", `--ignore=${UNIT_TIER}`, "tests/"],
  unit: unitTestArgs(),
};

/**
 * Runs deno test, echoing its output while keeping it to read the summary. It gets its own
 * process group so that processes tests leave behind (an operator under test, say) are stopped
 * with it rather than outliving the run.
 */
async function denoTest(
  args: string[],
  env: Record<string, string>,
): Promise<{ passed: number; failed: number; failures: string[] }> {
  testChild = new Deno.Command(DENO, {
    args,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
    detached: true,
  }).spawn();
  const output = await echoed(testChild.stdout);
  const st = await testChild.status;
  await stopGroups([testChild.pid], 2000); // leftovers of the tests, if any
  testChild = undefined;
  const summary = parseDenoTestSummary(output);
  const failures = parseDenoTestFailures(output);
  // No summary: e.g. a type error before any test ran.
  if (!summary) return { passed: 0, failed: 1, failures: ["deno test printed no summary"] };
  if (!st.success && summary.failed === 0) summary.failed = 1;
  return { ...summary, failures };
}

/** Where `./task demo` brings up its cluster. */
const DEMO_CLUSTER_DIR = ".cluster";

/**
 * Runs `./task demo` as the README says, echoing its output, and fails unless it exited 0 and
 * printed the lead broker's report (hack/demo.ts demoOutputProblems).
 */
async function runDemo(): Promise<string> {
  const child = new Deno.Command("./task", {
    args: ["demo"],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const output = await echoed(child.stdout);
  const st = await child.status;
  if (!st.success) throw new Error(`./task demo exited with ${st.code}`);
  const problems = demoOutputProblems(output, await Deno.readTextFile("examples/hello-world.yaml"));
  if (problems.length > 0) throw new Error(`./task demo printed: ${problems.join("; ")}`);
  // The tests get the cluster without the demo's MiniCluster and operator: an operator they
  // install cluster-wide must not meet a MiniCluster another operator also reconciles.
  const { kubeconfig } = await status(DEMO_CLUSTER_DIR);
  if (!kubeconfig) throw new Error("the demo left no cluster in .cluster/");
  await kubectl(kubeconfig, [
    "delete",
    "--namespace=default",
    "minicluster/hello-world",
    "--wait=true",
    "--timeout=120s",
  ]);
  await stopRecorded(DEMO_CLUSTER_DIR, "operator");
  return output.split("\n").find((l) => l.startsWith("MiniCluster ")) ?? "";
}

/** The suite runs against a cluster given by the caller (no cluster, no images built here). */
const MC_KUBECONFIG_GIVEN = Deno.env.get("MC_KUBECONFIG") !== undefined;

async function main(): Promise<number> {
  const t0 = performance.now();
  let clusterDir: string | undefined; // set when this script started the cluster
  // One teardown shared by the normal path and the signal handlers: whoever comes second waits
  // for the first instead of exiting halfway through it.
  let stopping: Promise<void> | undefined;
  const teardown = () =>
    stopping ??= (async () => {
      if (!clusterDir) return;
      say(`stopping the test cluster in ${clusterDir}`);
      await down(clusterDir);
    })();
  let signaled: Deno.Signal | undefined;
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(sig, async () => {
      signaled = sig;
      signalTests(sig);
      await teardown();
      Deno.exit(sig === "SIGINT" ? 130 : 143);
    });
  }

  // deno.json freezes the lock, so Deno itself refuses to change it; this also catches a change
  // by any other means during the run.
  const lockAtStart = await Deno.readTextFile("deno.lock");
  try {
    await step("shellcheck", async () => {
      await ensureDebianPackages(["shellcheck"]);
      await run("shellcheck", SHELL_SCRIPTS);
    });
    // Debian's containerd 1.6, which the real nodes' `--containerd=debian` runs:
    // tests/tooling/real_node_test.ts has it read the settings written for it. Not started.
    await step(
      "Debian's containerd (the debian runtime's settings are checked against it)",
      () => ensureDebianPackages(["containerd"]),
    );
    // The local images (Debian downloads, then the Flux build) are built while the Go builds
    // run: on a fresh machine the two together take most of the run. The cluster step waits.
    const images = MC_KUBECONFIG_GIVEN ? undefined : ensureImages().catch((e: Error) => e);
    // Helm too: the chart is linted and rendered by tests/integration/chart_test.ts; Kueue,
    // which the cluster runs for tests/e2e/kueue_test.ts; metrics-server and KEDA, for
    // tests/real/autoscaler_test.ts; and the real nodes' containerd 2 and runc.
    await step(
      "kubernetes binaries, helm, kueue, metrics-server, keda and the real node's (containerd 2, " +
        "runc)",
      async () =>
        await ensureBinaries([
          ...COMPONENTS,
          "helm",
          "kueue",
          "metrics-server",
          "keda",
          ...REAL_NODE_BINARIES,
          ...runtimeBuilds(DEFAULT_CONTAINER_RUNTIME),
        ]),
    );
    // The Go operator's Python SDK, pinned with hashes, for tests/*/python_sdk_test.ts: PyPI is
    // asked here, during set-up, and never while the tests run.
    await step("Python SDK environment (tests/python_sdk/requirements.txt)", async () => {
      await ensureDebianPackages(["python3-venv"]);
      await pythonSdk();
    });
    await step("deno task check (fmt, lint, types)", () => run(DENO, ["task", "check"]));
    if (await Deno.stat("hack/generate.ts").then(() => true, () => false)) {
      await step(
        "generated code is up to date",
        () => run(DENO, ["run", "-A", "hack/generate.ts", "--check"]),
      );
    }
    for (
      const generator of [
        "hack/cluster-role.ts",
        "hack/install-manifest.ts",
        "hack/chart.ts",
        "hack/api-docs.ts",
        "hack/layout-docs.ts",
        "hack/object-diagram.ts",
      ]
    ) {
      await step(
        `${generator} output is up to date`,
        () => run(DENO, ["run", "-A", generator, "--check"]),
      );
    }

    // The README's first command as a newcomer runs it: from a clean state (a cluster left in
    // .cluster/ is stopped and removed first), its output checked for what it promises. The
    // cluster it leaves (with the demo's operator, which watches only "default") is the one the
    // tests then use, and is stopped at the end.
    if (!MC_KUBECONFIG_GIVEN) {
      const demoOk = await step("./task demo from a clean state", async () => {
        const built = await images;
        if (built instanceof Error) throw new Error(`building the local images: ${built.message}`);
        await down(DEMO_CLUSTER_DIR);
        clusterDir = DEMO_CLUSTER_DIR;
        return await runDemo();
      });
      // A half-started cluster with a real node would hold the bridge the next one needs.
      if (!demoOk) await down(DEMO_CLUSTER_DIR);
    }

    let kubeconfig = Deno.env.get("MC_KUBECONFIG");
    let realNodes = Deno.env.get("MC_REAL_NODES") === "1";
    if (!kubeconfig) {
      // A real node runs what the KWOK ones only simulate; it needs root and builds the local
      // images (Flux from source) on first use. When it cannot run, this step fails with what
      // is missing, and so does the suite. Two real nodes, so that MPI ranks talk across
      // kubelets (tests/real/mpi_test.ts): `up` adds the second to the demo's cluster (about
      // 45 s, most of it importing the images), less than the demo starting two would add to
      // every newcomer's first command.
      // Kueue (hack/cluster/kueue.ts) on the second real node, for the queueing scenarios, and
      // metrics-server (hack/cluster/metrics_server.ts) and KEDA (hack/cluster/keda.ts) for the
      // autoscalers'.
      const cluster = {
        mode: "full" as const,
        nodes: 4,
        realNodes: 2,
        kueue: true,
        metrics: true,
        keda: true,
      };
      realNodes = await step(
        "full cluster (etcd, apiserver, controller manager, scheduler, KWOK, two real nodes, " +
          "Kueue, metrics-server, KEDA)",
        async () => {
          const built = await images;
          if (built instanceof Error) {
            throw new Error(`building the local images: ${built.message}`);
          }
          const dev = await status(DEMO_CLUSTER_DIR);
          if (dev.healthy && dev.mode === "full") {
            // `up` on a running cluster restarts what this checkout configures differently.
            kubeconfig = await up({ dir: DEMO_CLUSTER_DIR, ...cluster });
            return "reusing the demo's cluster in .cluster/";
          }
          const dir = join(Deno.env.get("TMPDIR") || "/tmp", `minicluster-test-${Deno.pid}`);
          clusterDir = dir;
          kubeconfig = await up({ dir, ...cluster });
          return `started in ${dir}`;
        },
      );
    }

    say(`deno ${TEST_RUNS.cluster.join(" ")}`);
    const env: Record<string, string> = kubeconfig
      ? {
        MC_KUBECONFIG: kubeconfig,
        MC_REAL_NODES: realNodes ? "1" : "0",
        MC_KUEUE: realNodes ? "1" : "0",
        MC_METRICS: realNodes ? "1" : "0",
        MC_KEDA: realNodes ? "1" : "0",
      }
      : {};
    const clusterTests = await denoTest(TEST_RUNS.cluster, env);
    await teardown();
    if (signaled) return signaled === "SIGINT" ? 130 : 143;
    say(`the unit tier: deno ${TEST_RUNS.unit.join(" ")}`);
    const unitStart = performance.now();
    const unitTests = await denoTest(TEST_RUNS.unit, {});
    const unitVerdict = budgetVerdict((performance.now() - unitStart) / 1000);
    if (signaled) return signaled === "SIGINT" ? 130 : 143;
    await step("the unit tier within its budget (hack/test_unit.ts)", () => {
      say(unitVerdict.line);
      if (unitVerdict.over) throw new Error(unitVerdict.line);
      return Promise.resolve(unitVerdict.line);
    });
    const tests = {
      passed: clusterTests.passed + unitTests.passed,
      failed: clusterTests.failed + unitTests.failed,
    };
    // After the tests, on a control plane of its own: it replaces the CRD with the Go operator's
    // for a while, which the tests' cluster must not see. A few minutes (docs/testing.md).
    await step(
      "differential conformance with the Go Flux Operator (deno task conformance)",
      () => run(DENO, ["run", "-A", "hack/conformance/main.ts"]),
    );
    await step("deno.lock unchanged by the run", async () => {
      if (await Deno.readTextFile("deno.lock") !== lockAtStart) {
        throw new Error(
          "deno.lock changed during the run: lock the dependency (deno install --frozen=false) " +
            "and commit deno.lock",
        );
      }
    });

    const stepsPassed = results.filter((r) => r.ok).length;
    const stepsFailed = results.length - stepsPassed;
    console.log("");
    for (const r of results) {
      console.log(
        `${r.ok ? "ok    " : "FAILED"} ${r.name} (${r.seconds.toFixed(1)} s)${
          r.note ? ` — ${r.note.split("\n")[0]}` : ""
        }`,
      );
    }
    const failures = [...clusterTests.failures, ...unitTests.failures];
    if (failures.length) console.log(`\nfailed tests:\n${failures.join("\n")}`);
    console.log(`deno test: ${tests.passed} passed, ${tests.failed} failed`);
    console.log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    console.log(`${tests.passed + stepsPassed} passed, ${tests.failed + stepsFailed} failed`);
    return tests.failed + stepsFailed === 0 ? 0 : 1;
  } finally {
    await teardown();
  }
}

if (import.meta.main) Deno.exit(await main());
