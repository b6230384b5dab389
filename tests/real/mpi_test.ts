// MPI across pods on two real nodes: programs compiled inside the MiniCluster with the mpi image's
// OpenMPI (mpicc.openmpi) and MPICH (mpicc.mpich), LAMMPS as the Go operator's CI runs it, the
// shared memory ranks in one pod need, and a rank that aborts. Flux bootstraps every MPI job
// through its PMI; the assertions read what the ranks printed (pod logs), where the pods ran, and
// the Job, never the operator's view alone.
//
// Of the Go operator's examples that run MPI, the CI's LAMMPS one (examples/tests/lammps) runs here
// with only the image, node and name changed. The others cannot: examples/mpi/mpich runs a
// `./hello_cxx` built into its own image; examples/tests/osu-benchmarks needs OpenMPI 5 through
// flux-pmix (`-ompi=openmpi@5`; the Flux build here has no flux-pmix) and the OSU binaries;
// examples/tests/disable-view needs an image with Flux and LAMMPS together; the shared-process-space
// and storage/google LAMMPS examples need goshare and a Filestore volume.
//
// No CPU requests: a broker advertises the cores Flux finds, and every `flux run` asks for at
// most two ranks per broker (each node of this machine has two cores).

import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import { join } from "node:path";
import { parse } from "yaml";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MPI_IMAGE } from "../../hack/images/refs.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { eventually } from "../harness.ts";
import { REAL_NAMESPACE, type RealEnv, realMiniCluster, realTest } from "./env.ts";
import { exampleOnRealNodes } from "../../testing/examples.ts";
import { ABORT_C, compileRecipe, RING_C, ringLine, SHM_C } from "./mpi_programs.ts";

const FIXTURES = new URL("../fixtures/manifests/valid/", import.meta.url).pathname;

/** A MiniCluster of the mpi image on the real nodes. */
function mpiMiniCluster(
  name: string,
  spec: Partial<MiniCluster["spec"]>,
  container: Record<string, unknown>,
): MiniCluster {
  return realMiniCluster(name, spec, { image: MPI_IMAGE, ...container });
}

/** Waits until `type` is True; fails at once if the other end (`Failed`/`Succeeded`) came. */
async function ended(
  env: RealEnv,
  name: string,
  type: "Succeeded" | "Failed",
  timeoutMs: number,
): Promise<{ condition: Condition; seconds: number }> {
  const t0 = performance.now();
  const other = type === "Succeeded" ? "Failed" : "Succeeded";
  const condition = await eventually(async () => {
    const mc = await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name);
    const conditions = (mc.status?.conditions ?? []) as Condition[];
    const end = conditions.find((c) =>
      (c.type === type || c.type === other) && c.status === "True"
    );
    if (!end) throw new Error(`${name}: ${JSON.stringify(conditions)}`);
    return end;
  }, { timeoutMs, intervalMs: 1000 });
  if (condition.type !== type) {
    throw new Error(`${name} is ${condition.type}, not ${type}: ${condition.message}`);
  }
  return { condition, seconds: (performance.now() - t0) / 1000 };
}

function indexOf(pod: Pod): number {
  return Number(pod.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] ?? -1);
}

/** The lead broker's log (the MiniCluster's output with `logging.quiet`). */
async function leadLog(env: RealEnv, name: string): Promise<string> {
  const lead = (await env.pods(name)).find((p) => indexOf(p) === 0);
  if (!lead) throw new Error(`${name}: no lead broker pod`);
  return await env.logs(lead.metadata!.name!, name);
}

/** Each broker's node, by index: real nodes, at least two, or the test proves nothing. */
async function nodesOf(env: RealEnv, name: string): Promise<string[]> {
  const pods = await env.pods(name);
  const nodes = pods.map((p) => p.spec?.nodeName ?? "");
  assert.ok(nodes.every((n) => n.startsWith("mc-real-")), `${name}: pods on ${nodes.join(", ")}`);
  assert.ok(new Set(nodes).size >= 2, `${name}: pods on ${nodes.join(", ")}, want 2 nodes`);
  return nodes;
}

/** Lines of RING_C for every rank of `ranks`, each on the host of the broker its rank ran on. */
function assertRing(log: string, ranks: number): void {
  for (let r = 0; r < ranks; r++) assert.match(log, ringLine(r, ranks), log);
  assert.equal(log.match(/^rank \d+ of /gm)?.length, ranks, log);
}

// The OpenMPI scenario runs examples/mpi-openmpi.yaml (its ring prints what RING_C prints). The one
// scenario on the copied view (the Go operator's design, viewFrom: Copy) while the others
// take the suite's mode (the mounted view on containerd 2): both modes stay proven on real nodes.
realTest(
  "real mpi: an OpenMPI job of 6 ranks over 3 brokers on 2 nodes, the Flux view copied, reduces and passes a ring",
  async (env) => {
    // examples/mpi-openmpi.yaml as a user applies it, with the local images and nodes.
    const [example] = exampleOnRealNodes("mpi-openmpi.yaml");
    const name = example.metadata!.name!;
    example.metadata!.namespace = REAL_NAMESPACE;
    example.spec!.flux!.container!.viewFrom = "Copy";
    assert.deepEqual([example.spec!.size, example.spec!.tasks], [3, 6]);
    await env.apply(example);
    const { seconds } = await ended(env, name, "Succeeded", 240_000);
    const nodes = await nodesOf(env, name);
    const log = await leadLog(env, name);
    assertRing(log, 6);
    // Two ranks per broker: each broker's host printed twice.
    for (let i = 0; i < 3; i++) {
      assert.equal(log.match(new RegExp(` on ${name}-${i}: `, "g"))?.length, 2, log);
    }
    console.log(
      `  OpenMPI, 6 ranks on ${nodes.join(", ")}: apply to Succeeded ${seconds.toFixed(1)} s`,
    );
  },
);

/** Runs the ring `RUNS` times, each with a time limit, and says how many finished. */
const RUNS = 20;
const MPICH_RUNS = `cat > /tmp/runs.sh <<'RUNS'
ok=0
for i in $(seq 1 ${RUNS}); do
  start=$(date +%s%N)
  if flux run -N3 -n6 -t 60s /tmp/ring > /tmp/run-$i.out 2>&1; then
    ok=$((ok + 1))
    echo "run $i finished in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  else
    echo "run $i FAILED (hang or error; time limit 60 s): $(tail -n 3 /tmp/run-$i.out)"
  fi
  sort /tmp/run-$i.out
done
echo "MPICH runs finished: $ok/${RUNS}"
[ "$ok" -eq ${RUNS} ]
RUNS
`;

realTest(
  `real mpi: ${RUNS} consecutive MPICH jobs over 3 brokers on 2 nodes all finish`,
  async (env) => {
    const name = "mpich";
    await env.apply(mpiMiniCluster(name, { size: 3, logging: { quiet: true } }, {
      launcher: true,
      commands: { pre: compileRecipe("ring", RING_C, "mpicc.mpich") + MPICH_RUNS },
      command: "bash /tmp/runs.sh",
    }));
    const { seconds } = await ended(env, name, "Succeeded", 600_000).catch(async (e) => {
      throw new Error(`${e.message}\n${await leadLog(env, name).catch(() => "")}`);
    });
    await nodesOf(env, name);
    const log = await leadLog(env, name);
    assert.match(log, new RegExp(`^MPICH runs finished: ${RUNS}/${RUNS}$`, "m"), log);
    const times = [...log.matchAll(/^run \d+ finished in (\d+) ms$/gm)].map((m) => Number(m[1]));
    assert.equal(times.length, RUNS, log);
    // Every run printed all six ranks' right values.
    for (let r = 0; r < 6; r++) {
      const each = log.split("\n").filter((l) => ringLine(r, 6).test(l));
      assert.equal(each.length, RUNS, `rank ${r}: ${each.length} right lines\n${log}`);
    }
    times.sort((a, b) => a - b);
    console.log(
      `  MPICH ${RUNS}/${RUNS} runs of 6 ranks: ${times[0]}–${times.at(-1)} ms each ` +
        `(median ${times[RUNS >> 1]}), apply to Succeeded ${seconds.toFixed(1)} s`,
    );
  },
  { timeoutMs: 660_000 },
);

/** The Go operator's CI LAMMPS MiniCluster (examples/tests/lammps), on the mpi image. */
async function goLammps(name: string): Promise<MiniCluster> {
  const go = parse(await Deno.readTextFile(join(FIXTURES, "go-tests-lammps.yaml"))) as MiniCluster;
  const local = mpiMiniCluster(name, {}, {});
  const { containers, pod, ...rest } = go.spec!;
  local.spec = {
    ...local.spec,
    ...rest,
    containers: containers!.map((c) => ({ ...c, image: MPI_IMAGE })),
    // Its labels, and the real nodes' selector and toleration.
    pod: { ...local.spec!.pod, ...pod },
  };
  return local;
}

function assertLammps(log: string, procs: number, steps: number, atoms: number): void {
  assert.equal(log.match(/^LAMMPS \(/gm)?.length, 1, `one banner:\n${log}`);
  assert.match(
    log,
    new RegExp(
      `^Loop time of [\\d.]+ on ${procs} procs for ${steps} steps with ${atoms} atoms$`,
      "m",
    ),
    log,
  );
  assert.match(log, /^Total wall time: \d+:\d\d:\d\d$/m, log);
  assert.doesNotMatch(log, /^ERROR/m, log);
}

realTest(
  "real mpi: the Go operator's CI LAMMPS example (ReaxFF HNS) runs, then 8 ranks over 4 brokers",
  async (env) => {
    // As its CI runs it: size 4, tasks 2 (so `flux submit -n2`), logging.quiet; HNS 2x2x2.
    await env.apply(await goLammps("lammps"));
    const first = await ended(env, "lammps", "Succeeded", 300_000);
    await nodesOf(env, "lammps");
    const log = await leadLog(env, "lammps");
    assertLammps(log, 2, 100, 2432);

    // Two ranks on every broker (`flux submit -N4 -n8`), on melt (Lennard-Jones): eight ranks on
    // two cores spend most of their time waiting for the cores, and ReaxFF's charge equilibration
    // (a collective per iteration) took over a minute per 10 steps even at 304 atoms.
    const wide = await goLammps("lammps-8");
    wide.spec!.tasks = 8;
    wide.spec!.containers![0] = {
      ...wide.spec!.containers![0],
      workingDir: "/usr/share/lammps/examples/melt",
      command: "lmp -in in.melt -nocite",
    };
    await env.apply(wide);
    const second = await ended(env, "lammps-8", "Succeeded", 300_000);
    await nodesOf(env, "lammps-8");
    const log8 = await leadLog(env, "lammps-8");
    assertLammps(log8, 8, 250, 4000);
    const loop = (l: string) => l.match(/^Loop time of ([\d.]+)/m)?.[1];
    console.log(
      `  LAMMPS HNS 2x2x2 on 2 ranks: loop ${loop(log)} s, apply to Succeeded ` +
        `${first.seconds.toFixed(1)} s; melt on 8 ranks: loop ${loop(log8)} s, ` +
        `${second.seconds.toFixed(1)} s`,
    );
  },
  { timeoutMs: 660_000 },
);

/** Two ranks in one pod share 2 × 48 MiB: more than the runtime's 64 MiB /dev/shm. */
const SHM_MIB_PER_RANK = 48;

function shmMiniCluster(name: string, volumes: Record<string, unknown>): MiniCluster {
  // Not quiet: the log shows the size of /dev/shm that `pre` prints.
  return mpiMiniCluster(name, { size: 1, tasks: 2 }, {
    commands: {
      pre: compileRecipe("shm", SHM_C, "mpicc.mpich") + "df -m /dev/shm | tail -n 1\n",
    },
    command: `/tmp/shm ${SHM_MIB_PER_RANK}`,
    volumes,
  });
}

realTest(
  "real mpi: ranks sharing more than 64 MiB in one pod need /dev/shm as a memory emptyDir",
  async (env) => {
    const small = "shm-default";
    await env.apply(shmMiniCluster(small, {}));
    const failed = await ended(env, small, "Failed", 240_000);
    const smallLog = await leadLog(env, small);
    // The runtime's /dev/shm: 64 MiB.
    assert.match(smallLog, /^shm\s+64\s+/m, smallLog);
    assert.doesNotMatch(smallLog, /^shm ok/m, smallLog);
    // 128 + SIGBUS: a rank touched a page of the window that the full tmpfs could not back.
    assert.match(smallLog, /Flux instance ended with exit code 135/, smallLog);

    const big = "shm-memory";
    await env.apply(shmMiniCluster(big, {
      "dshm": { path: "/dev/shm", emptyDir: true, emptyDirMedium: "memory" },
    }));
    await ended(env, big, "Succeeded", 240_000);
    const bigLog = await leadLog(env, big);
    assert.match(bigLog, /^shm ok: 2 ranks x 48 MiB = 96 MiB shared$/m, bigLog);
    console.log(
      `  2 x ${SHM_MIB_PER_RANK} MiB shared: default /dev/shm Failed (${failed.condition.message}); ` +
        "memory emptyDir Succeeded",
    );
  },
  { timeoutMs: 540_000 },
);

realTest(
  "real mpi: a rank calling MPI_Abort fails the Flux job, the Job and the MiniCluster",
  async (env) => {
    const name = "mpi-abort";
    await env.apply(mpiMiniCluster(name, { size: 2, tasks: 4, logging: { quiet: true } }, {
      commands: { pre: compileRecipe("abort", ABORT_C, "mpicc.openmpi") },
      command: "/tmp/abort",
    }));
    const { condition, seconds } = await ended(env, name, "Failed", 180_000);
    assert.match(condition.message ?? "", /exit code/, condition.message);
    const log = await leadLog(env, name);
    assert.match(log, /^rank 1 calls MPI_Abort$/m, log);
    assert.doesNotMatch(log, /passed the barrier/, log);
    assert.match(log, /MPI_ABORT was invoked on rank 1/, log);
    assert.match(log, /Flux instance ended with exit code [1-9]\d*/, log);
    const job = await env.client.get<Job>(Jobs, REAL_NAMESPACE, name);
    assert.ok(
      job.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True"),
      JSON.stringify(job.status?.conditions),
    );
    console.log(`  MPI_Abort: apply to Failed ${seconds.toFixed(1)} s: ${condition.message}`);
  },
);
