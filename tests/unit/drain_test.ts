/**
 * The drain of a removed follower broker (spec.flux.drainGracePeriodSeconds, scripts/drain.ts):
 * its preStop hook run against a stub `flux` (drains the rank, waits for its jobs, cancels and
 * names them when the grace period runs out, never runs on the lead broker, ends at once without
 * a broker), the hook's composition with the user's preStopExec, the undrain on join, and what the
 * Job's pods get.
 */
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { buildEntrypointConfigMap } from "../../controllers/minicluster/children/entrypoint.ts";
import { buildJob } from "../../controllers/minicluster/children/job.ts";
import type { MiniClusterContainer } from "../../api/mod.ts";
import { preStopCommand } from "../../controllers/minicluster/children/pod/containers.ts";
import {
  DRAIN_GRACE_EXPIRED,
  DRAIN_REASON,
  drainReserveSeconds,
  undrainOnJoin,
} from "../../controllers/minicluster/children/scripts/drain.ts";
import { TERMINATION_LOG } from "../../controllers/minicluster/children/scripts/view-environment.ts";
import { run, scriptProblems } from "../generated/script_checks.ts";
import { miniCluster } from "./entrypoint_cases.ts";
import { specSized } from "./fixtures.ts";

const image = "rockylinux:9";

function drainingMiniCluster(grace = 60, preStopExec?: string) {
  return miniCluster(
    {
      size: 4,
      flux: { drainGracePeriodSeconds: grace },
      containers: [
        { image, runFlux: true, command: "hostname", lifeCycle: { preStopExec } },
        { name: "side", image, command: "sleep 1" },
      ],
    },
    "mc",
    "ns",
  );
}

interface Stub {
  /** `flux getattr rank` prints this; undefined: no broker answers (exit 1). */
  rank?: number;
  /** `flux resource status -s draining` says the rank is still draining this many times. */
  drainingPolls?: number;
  /** `flux jobs -f running` prints these. */
  running?: string[];
  /** `flux resource drain` without targets prints this reason (the rank drained with it). */
  drainedReason?: string;
  /** `flux resource status` fails (no answer from the lead broker). */
  statusFails?: boolean;
}

/**
 * Runs a script in `root` with stubs of `flux` and `hostname` (which prints `host`); resolves its
 * outcome and each `flux` call as its arguments.
 */
async function runWithStubs(root: string, script: string, host: string, stub: Stub) {
  const bin = `${root}/bin`;
  await Deno.mkdir(bin, { recursive: true });
  const calls = `${root}/calls`;
  await Deno.writeTextFile(calls, "");
  const polls = `${root}/polls`;
  await Deno.writeTextFile(polls, "");
  await Deno.writeTextFile(`${bin}/hostname`, `#!/bin/sh\necho ${host}\n`);
  await Deno.writeTextFile(
    `${bin}/flux`,
    [
      "#!/bin/bash",
      `echo "$*" >> ${calls}`,
      'case "$1 $2" in',
      `  "getattr rank") ${stub.rank === undefined ? "exit 1" : `echo ${stub.rank}`} ;;`,
      '  "resource status")',
      `    echo x >> ${polls}`,
      ...(stub.statusFails ? ["    exit 1"] : []),
      `    if [ "$(wc -l < ${polls})" -le ${
        stub.drainingPolls ?? 0
      } ]; then echo ${stub.rank}; fi ;;`,
      `  "jobs -n") printf '%s\\n' ${(stub.running ?? []).join(" ")} ;;`,
      '  "resource drain")',
      `    if [ "$3" = -n ]; then echo ${JSON.stringify(stub.drainedReason ?? "")}; fi ;;`,
      "esac",
      "exit 0",
    ].join("\n"),
  );
  for (const f of ["flux", "hostname"]) await Deno.chmod(`${bin}/${f}`, 0o755);
  const result = await run("bash", ["-c", script], {
    env: { PATH: `${bin}:${Deno.env.get("PATH")}` },
  });
  const called = (await Deno.readTextFile(calls)).split("\n").filter((l) => l !== "");
  return { ...result, calls: called };
}

/** The hook of `mc` with its paths in `root` and a wait of `seconds` instead of the grace's. */
function hookIn(root: string, grace: number, seconds: number): string {
  const data = buildEntrypointConfigMap(...specSized(drainingMiniCluster(grace))).data ?? {};
  return data["drain-0"]
    .replace(/^viewbase=.*$/m, `viewbase=${root}/mnt`)
    .replace(/deadline=\$\(\(SECONDS \+ \d+\)\)/, `deadline=$((SECONDS + ${seconds}))`)
    .replaceAll(TERMINATION_LOG, `${root}/termination-log`);
}

async function inTemp<T>(fn: (root: string) => Promise<T>): Promise<T> {
  const root = await Deno.makeTempDir({ prefix: "drain-test-" });
  try {
    return await fn(root);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("the drain keeps a fifth of the grace period, 3 to 15 s, for cancelling and leaving", () => {
  assert.equal(drainReserveSeconds(5), 3);
  assert.equal(drainReserveSeconds(10), 3);
  assert.equal(drainReserveSeconds(30), 6);
  assert.equal(drainReserveSeconds(60), 12);
  assert.equal(drainReserveSeconds(3600), 15);
});

Deno.test("the hook waits from the grace period less the reserve; it and the undrain are clean shell", async () => {
  const data = buildEntrypointConfigMap(...specSized(drainingMiniCluster(60))).data ?? {};
  assert.match(data["drain-0"], /deadline=\$\(\(SECONDS \+ 48\)\)/);
  assert.deepEqual(await scriptProblems("drain-0", data["drain-0"], "style"), []);
  // The Flux container's script undrains on join and stops its broker on SIGTERM; the sidecar's
  // start script does neither.
  assert.match(data["wait-0"], /undrainOnJoin &/);
  assert.match(data["wait-0"], /trap '.*' TERM/);
  assert.ok(!Object.keys(data).includes("drain-1"));
  assert.doesNotMatch(data["start-1"], /undrain|trap/);
});

Deno.test("the hook drains a follower's rank and returns once the rank's jobs have ended", async () => {
  await inTemp(async (root) => {
    const r = await runWithStubs(root, hookIn(root, 60, 20), "mc-3", {
      rank: 3,
      drainingPolls: 1,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.calls, [
      "getattr rank",
      `resource drain -u 3 ${DRAIN_REASON}`,
      "resource status -n --skip-empty -s draining -i 3 -o {ranks}",
      "resource status -n --skip-empty -s draining -i 3 -o {ranks}",
    ]);
    assert.match(r.stdout, /Rank 3 is drained: its jobs have ended/);
    assert.equal(await Deno.stat(`${root}/termination-log`).catch(() => undefined), undefined);
  });
});

Deno.test("when the grace period runs out, the hook cancels the rank's jobs and names them", async () => {
  await inTemp(async (root) => {
    const r = await runWithStubs(root, hookIn(root, 60, 1), "mc-3", {
      rank: 3,
      drainingPolls: 1000,
      running: ["fAbc1", "fXyz2"],
    });
    assert.equal(r.code, 1, "a failed hook: the kubelet reports it (FailedPreStopHook)");
    const cancel = r.calls.find((c) => c.startsWith("cancel"));
    assert.equal(
      cancel,
      "cancel --message=rank 3 removed: drain grace period ran out fAbc1 fXyz2",
    );
    assert.ok(r.calls.includes("jobs -n -f running -i 3 -o {id.f58}"));
    const message = await Deno.readTextFile(`${root}/termination-log`);
    assert.equal(
      message,
      `${DRAIN_GRACE_EXPIRED}: rank 3 (mc-3): the drain grace period (60s) ran out; ` +
        "cancelled its running jobs: fAbc1 fXyz2",
    );
    assert.match(r.stdout, /cancelled its running jobs: fAbc1 fXyz2/);
  });
});

Deno.test("the hook never drains the lead broker, and ends at once without a broker", async () => {
  await inTemp(async (root) => {
    const lead = await runWithStubs(root, hookIn(root, 60, 20), "mc-0", { rank: 0 });
    assert.equal(lead.code, 0);
    assert.deepEqual(lead.calls, [], "the lead broker's pod asks Flux nothing");
    // Rank 0 under another hostname (a custom hostlist): still never drained.
    const rankZero = await runWithStubs(root, hookIn(root, 60, 20), "elsewhere", { rank: 0 });
    assert.deepEqual(rankZero.calls, ["getattr rank"]);
    // The whole MiniCluster going: no broker answers, nothing to drain, no wait.
    const t0 = performance.now();
    const gone = await runWithStubs(root, hookIn(root, 60, 20), "mc-2", {});
    assert.equal(gone.code, 0);
    assert.deepEqual(gone.calls, ["getattr rank"]);
    assert.ok(performance.now() - t0 < 5_000);
    // The lead broker gone after the drain: three questions without an answer, then no wait.
    const lost = await runWithStubs(root, hookIn(root, 60, 20), "mc-2", {
      rank: 2,
      statusFails: true,
    });
    assert.equal(lost.code, 0);
    assert.equal(lost.calls.filter((c) => c.startsWith("resource status")).length, 3);
    assert.ok(!lost.calls.some((c) => c.startsWith("cancel")));
  });
});

Deno.test("a joined follower undrains its rank only when a removed pod's hook drained it", async () => {
  await inTemp(async (root) => {
    const script = [
      `configroot=${root}`,
      ...undrainOnJoin().filter((l) => l !== "undrainOnJoin &"),
      // Without the first sleep of its loop.
      "sleep() { :; }",
      "undrainOnJoin",
    ].join("\n");
    const ours = await runWithStubs(root, script, "mc-2", { rank: 2, drainedReason: DRAIN_REASON });
    assert.equal(ours.code, 0, ours.stderr);
    assert.deepEqual(ours.calls, [
      "getattr rank",
      "resource drain -n -i 2 -o {reason}",
      "resource undrain 2 its broker joined again",
    ]);
    const admins = await runWithStubs(root, script, "mc-2", { rank: 2, drainedReason: "bad disk" });
    assert.deepEqual(admins.calls, ["getattr rank", "resource drain -n -i 2 -o {reason}"]);
    const notDrained = await runWithStubs(root, script, "mc-2", { rank: 2 });
    assert.deepEqual(notDrained.calls, ["getattr rank", "resource drain -n -i 2 -o {reason}"]);
  });
});

Deno.test("the drain runs before the user's preStopExec, which stays one word of its own", async () => {
  assert.equal(preStopCommand(undefined, undefined), undefined);
  assert.deepEqual(preStopCommand("echo hi", undefined), ["/bin/sh", "-c", "echo hi"]);
  assert.deepEqual(preStopCommand(undefined, "/flux_operator/drain-0.sh"), [
    "/bin/bash",
    "/flux_operator/drain-0.sh",
  ]);
  await inTemp(async (root) => {
    const order = `${root}/order`;
    const hook = async (drainCode: number, user: string) => {
      const drain = `${root}/drain.sh`;
      await Deno.writeTextFile(drain, `echo drain >> ${order}\nexit ${drainCode}\n`);
      await Deno.writeTextFile(order, "");
      const [cmd, ...args] = preStopCommand(user, drain)!;
      const r = await run(cmd, args);
      return { code: r.code, order: (await Deno.readTextFile(order)).trim().split("\n") };
    };
    // The user's command as written (quotes, $, ;) runs after the drain.
    assert.deepEqual(await hook(0, `echo "user's \\$HOME; ok" >> ${order}`), {
      code: 0,
      order: ["drain", "user's $HOME; ok"],
    });
    // The user's failure shows when the drain succeeded; the drain's failure wins.
    assert.equal((await hook(0, "exit 3")).code, 3);
    assert.deepEqual(await hook(1, `echo user >> ${order}; exit 3`), {
      code: 1,
      order: ["drain", "user"],
    });
  });
});

Deno.test("the Job: the grace period as set, the hook on the Flux container only, replaced once ended", () => {
  const job: Job = buildJob(...specSized(drainingMiniCluster(90, "echo bye")));
  const pod = job.spec!.template.spec!;
  assert.equal(pod.terminationGracePeriodSeconds, 90);
  // A going broker's replacement waits for it to end: two brokers of one rank make Flux drop the
  // first as crashed, with its jobs.
  assert.equal(job.spec!.podReplacementPolicy, "Failed");
  const [flux, side] = pod.containers;
  assert.deepEqual(flux.lifecycle?.preStop?.exec?.command, [
    ...preStopCommand("echo bye", "/flux_operator/drain-0.sh")!,
  ]);
  assert.equal(side.lifecycle, undefined);
  const projected = pod.volumes!.flatMap((v) =>
    v.projected?.sources?.flatMap((s) => s.configMap?.items ?? []) ?? []
  );
  assert.ok(projected.some((i) => i.key === "drain-0" && i.path === "drain-0.sh"));
  // Without the field: no grace period of the operator's, no hook.
  const plain = buildJob(...specSized(miniCluster({ size: 4, containers: [{ image }] })));
  assert.equal(plain.spec!.template.spec!.terminationGracePeriodSeconds, undefined);
  assert.equal(plain.spec!.podReplacementPolicy, undefined);
  assert.equal(plain.spec!.template.spec!.containers[0].lifecycle, undefined);
});

/** The follower's broker loop of a draining MiniCluster's wait script, run on its own. */
function followerLoop(): string {
  const data = buildEntrypointConfigMap(...specSized(drainingMiniCluster(60))).data ?? {};
  const lines = data["wait-0"].split("\n");
  const from = lines.findIndex((l) => l.includes("# SIGTERM (the pod goes, its rank drained"));
  const to = lines.findIndex((l, i) => i > from && l === "  done");
  assert.ok(from > 0 && to > from, "the follower's loop");
  return [
    "cfg=config",
    "brokerOptions=()",
    ...lines.slice(from, to + 1).map((l) => l.slice(2)),
    'echo "exit ${exitcode}"',
    'exit "${exitcode}"',
  ].join("\n");
}

Deno.test("a draining follower's broker leaves on SIGTERM and the container ends with 143", async () => {
  await inTemp(async (root) => {
    const bin = `${root}/bin`;
    await Deno.mkdir(bin);
    // A broker that runs until SIGTERM, then leaves (exit 0) and says so.
    await Deno.writeTextFile(
      `${bin}/flux`,
      `#!/bin/bash\ntrap 'echo left >> ${root}/broker; exit 0' TERM\n` +
        `echo started >> ${root}/broker\nwhile true; do sleep 0.1; done\n`,
    );
    await Deno.chmod(`${bin}/flux`, 0o755);
    const child = new Deno.Command("bash", {
      args: ["-c", followerLoop()],
      env: { PATH: `${bin}:${Deno.env.get("PATH")}` },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const started = async () =>
      (await Deno.readTextFile(`${root}/broker`).catch(() => "")).includes("started");
    for (let i = 0; i < 100 && !await started(); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(await started(), "the broker started");
    const t0 = performance.now();
    child.kill("SIGTERM");
    const out = await child.output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 143, stdout);
    assert.ok(performance.now() - t0 < 3_000, "at once, not after the 15 s retry");
    assert.match(stdout, /left with its pod/);
    assert.equal(await Deno.readTextFile(`${root}/broker`), "started\nleft\n");
  });
});

Deno.test("a draining MiniCluster's lead broker ends its instance on SIGTERM, in every run mode", async () => {
  const modes: Record<string, Partial<MiniClusterContainer>> = {
    interactive: {},
    submit: { command: "hostname" },
    batch: { command: "hostname", batch: true },
    launcher: { command: "flux run hostname", launcher: true },
  };
  for (const [mode, container] of Object.entries(modes)) {
    const mc = miniCluster(
      {
        size: 2,
        interactive: mode === "interactive",
        flux: { drainGracePeriodSeconds: 60 },
        containers: [{ image, ...container }],
      },
      "mc",
      "ns",
    );
    const lines = (buildEntrypointConfigMap(...specSized(mc)).data ?? {})["wait-0"].split("\n");
    const from = lines.findIndex((l) => l.includes("# SIGTERM (the pod goes): the instance ends"));
    const to = lines.findIndex((l, i) => i > from && l === "  trap - TERM");
    assert.ok(from > 0 && to > from, `${mode}: the lead broker's run`);
    assert.equal(lines.filter((l) => l.endsWith("|| exitcode=$?")).length, 2, "run and follower");
    await inTemp(async (root) => {
      const bin = `${root}/bin`;
      await Deno.mkdir(bin);
      await Deno.writeTextFile(
        `${bin}/flux`,
        // Holding no pipe of the test's: in a container the kernel ends it with the first process.
        `#!/bin/bash\nexec > /dev/null 2>&1\necho $$ > ${root}/pid\necho started >> ${root}/flux\n` +
          "while true; do sleep 0.1; done\n",
      );
      await Deno.chmod(`${bin}/flux`, 0o755);
      const script = [
        "cfg=config",
        "brokerOptions=()",
        "flags=()",
        "exitcode=0",
        ...lines.slice(from, to + 1).map((l) => l.slice(2)),
        'echo "the run ended with ${exitcode}"',
      ].join("\n");
      const child = new Deno.Command("bash", {
        args: ["-c", script],
        env: { PATH: `${bin}:${Deno.env.get("PATH")}` },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const started = async () =>
        (await Deno.readTextFile(`${root}/flux`).catch(() => "")).includes("started");
      for (let i = 0; i < 100 && !await started(); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(await started(), `${mode}: Flux started`);
      child.kill("SIGTERM");
      const out = await child.output();
      Deno.kill(Number(await Deno.readTextFile(`${root}/pid`)), "SIGKILL");
      const stdout = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 143, `${mode}: ${stdout}`);
      assert.match(stdout, /lead broker is going/);
      assert.doesNotMatch(stdout, /the run ended/, "not a run's end (no exit code 79)");
    });
  }
});
