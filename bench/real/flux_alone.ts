// deno task bench --flux-alone [--runs=5] [--real-sizes=2,8,16] — Flux's own start-up on this
// machine, with no Kubernetes, no container runtime and no operator: the floor under "last
// container start → every broker joined" of `--real`.
//
// The flux-view image's layers (the local build, hack/images/) are unpacked into a rootfs, and in
// a chroot of it (hack/images/chroot_run.sh, no network) `flux start --test-size=N` starts N
// brokers at once on this machine's cores, with the environment the operator's entrypoint gives
// them (the view's PATH, PYTHONPATH and FLUX_RC_EXTRA), at the log level both operators run
// brokers at. Each line the brokers write is stamped as it arrives; a run is timed from a line
// printed just before `flux start` to the lead broker's `quorum-full` (every broker online), and
// each broker's own state transitions give its rc1 (`flux modprobe rc1`: the modules, Fluxion on
// the lead) and the lead's wait in quorum (the followers' rc1 and Flux's groups batching).
// Brokers of `--test-size` talk over ipc:// sockets on one machine, so the network is not in it.
// Needs root (the chroot and its mounts).

import { join } from "node:path";
import { fluxViewImageSpec } from "../../hack/images/flux_images.ts";
import { flattenLayers } from "../../hack/images/verify.ts";
import { removeTree } from "../../hack/images/cache.ts";
import { chrootCommand } from "../../hack/images/chroot_command.ts";
import { summarize } from "../stats.ts";

const START_MARK = "flux-alone: flux start";
const say = (msg: string) => console.error(`[bench flux-alone] ${msg}`);

/** One line of the brokers' output, stamped (performance.now() ms) when it arrived. */
export interface ArrivedLine {
  at: number;
  text: string;
}

/** A broker's state machine transition as it logs it at level 6. */
export interface Transition {
  rank: number;
  event: string;
  from: string;
  to: string;
  /** How long the broker was in `from`, as the broker measured it. */
  seconds: number;
  at: number;
}

const TRANSITION = /broker\.\w+\[(\d+)\]: ([\w-]+): ([\w-]+)->([\w-]+) ([\d.]+)(ms|s)\s*$/;

/** The state transitions among the lines (`<6>broker.info[3]: rc1-success: init->quorum 0.14s`). */
export function transitions(lines: readonly ArrivedLine[]): Transition[] {
  const found: Transition[] = [];
  for (const { at, text } of lines) {
    const m = TRANSITION.exec(text);
    if (!m) continue;
    const value = Number(m[5]);
    found.push({
      rank: Number(m[1]),
      event: m[2],
      from: m[3],
      to: m[4],
      seconds: m[6] === "ms" ? value / 1000 : value,
      at,
    });
  }
  return found;
}

/** What one run measured, in milliseconds. */
export interface FluxAloneRun {
  size: number;
  /** From the line before `flux start` to the lead broker's `quorum-full`. */
  joinedMs: number;
  /** The lead broker's rc1 (its `init` state). */
  leadRc1Ms: number;
  /** The followers' rc1, the median follower's. */
  followerRc1Ms?: number;
  /** The slowest follower's rc1. */
  slowestFollowerRc1Ms?: number;
  /** The lead broker in `quorum` (from its rc1's end to every broker online). */
  leadQuorumMs: number;
}

/** The run's numbers from its stamped lines; an error names what is missing. */
export function fluxAloneRun(size: number, lines: readonly ArrivedLine[]): FluxAloneRun {
  const start = lines.find((l) => l.text.includes(START_MARK));
  const all = transitions(lines);
  const lead = (event: string) => all.find((t) => t.rank === 0 && t.event === event);
  const quorumFull = lead("quorum-full");
  const rc1 = (t: Transition) => t.from === "init" && t.to === "quorum";
  const leadRc1 = all.find((t) => t.rank === 0 && rc1(t));
  if (!start || !quorumFull || !leadRc1) {
    throw new Error(
      `size ${size}: no ${
        !start ? "start line" : !quorumFull ? "quorum-full" : "rc1"
      } of the lead broker in:\n${lines.map((l) => l.text).join("\n")}`,
    );
  }
  const followers = all.filter((t) => t.rank > 0 && rc1(t)).map((t) => t.seconds * 1000);
  return {
    size,
    joinedMs: quorumFull.at - start.at,
    leadRc1Ms: leadRc1.seconds * 1000,
    followerRc1Ms: followers.length ? summarize(followers).p50 : undefined,
    slowestFollowerRc1Ms: followers.length ? Math.max(...followers) : undefined,
    leadQuorumMs: quorumFull.seconds * 1000,
  };
}

/** The script run in the chroot: the entrypoint's environment of a mounted view, then Flux. */
function script(size: number): string {
  return [
    "set -euo pipefail",
    // Each broker looks its host name up; the chroot has no network and no DNS.
    'echo "127.0.0.1 $(hostname)" >> /etc/hosts',
    "set -- /opt/views/._view/*",
    'view="$1"',
    'export PATH="$PATH:$view/bin"',
    'py=$(find "$view" -maxdepth 2 -type d -path "$view/lib/python3*" | head -n 1)',
    'export PYTHONPATH="$py/site-packages"',
    'export FLUX_RC_EXTRA="$view/etc/flux"',
    "cd /tmp",
    `echo "${START_MARK}" >&2`,
    `exec flux start --test-size=${size} -o,-Slog-stderr-level=6,-Slog-stderr-mode=local true`,
  ].join("\n");
}

async function runOnce(rootfs: string, work: string, size: number): Promise<ArrivedLine[]> {
  // A writable overlay over the image, fresh for each run (the brokers' state directories).
  await removeTree(`${work}/upper`);
  await removeTree(`${work}/overlay-work`);
  for (const dir of ["upper", "overlay-work"]) {
    await Deno.mkdir(`${work}/${dir}`, { recursive: true });
  }
  const [cmd, ...args] = chrootCommand({
    rootfs,
    root: `${work}/root`,
    upper: { dir: `${work}/upper`, work: `${work}/overlay-work` },
    noNetwork: true,
  }, ["/bin/bash", "-c", script(size)]);
  const child = new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: ArrivedLine[] = [];
  const read = async (stream: ReadableStream<Uint8Array>) => {
    let rest = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      const at = performance.now();
      const parts = (rest + chunk).split("\n");
      rest = parts.pop() ?? "";
      for (const text of parts) lines.push({ at, text });
    }
    if (rest) lines.push({ at: performance.now(), text: rest });
  };
  const [status] = await Promise.all([child.status, read(child.stdout), read(child.stderr)]);
  if (!status.success) {
    throw new Error(
      `flux start --test-size=${size} exited ${status.code}:\n${
        lines.map((l) => l.text).join("\n")
      }`,
    );
  }
  return lines.sort((a, b) => a.at - b.at);
}

const ms = (v: number | undefined) => v === undefined ? "" : (v / 1000).toFixed(2);

/** The table: per size, medians of the runs with their range. */
export function fluxAloneTable(runs: readonly FluxAloneRun[]): string {
  const rows = [
    "| size | runs | start → every broker joined | lead rc1 | followers' rc1 (median / slowest) | lead in quorum |",
    "| ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const size of [...new Set(runs.map((r) => r.size))].sort((a, b) => a - b)) {
    const of = runs.filter((r) => r.size === size);
    const med = (f: (r: FluxAloneRun) => number | undefined) => {
      const xs = of.map(f).filter((x): x is number => x !== undefined);
      return xs.length ? summarize(xs).p50 : undefined;
    };
    const joined = of.map((r) => r.joinedMs);
    rows.push(
      `| ${size} | ${of.length} | ${ms(med((r) => r.joinedMs))} [${ms(Math.min(...joined))}–${
        ms(Math.max(...joined))
      }] | ${ms(med((r) => r.leadRc1Ms))} | ${ms(med((r) => r.followerRc1Ms))} / ${
        ms(med((r) => r.slowestFollowerRc1Ms))
      } | ${ms(med((r) => r.leadQuorumMs))} |`,
    );
  }
  return rows.join("\n");
}

export async function fluxAloneBench(sizes: number[], runs: number, out: string): Promise<number> {
  if (Deno.uid() !== 0) {
    throw new Error("--flux-alone needs root (a chroot of the flux-view image)");
  }
  const spec = await fluxViewImageSpec();
  const work = await Deno.makeTempDir({ prefix: "minicluster-flux-alone-" });
  const load = () => Deno.loadavg().map((x) => x.toFixed(2)).join(" ");
  const loadAtStart = load();
  const results: FluxAloneRun[] = [];
  try {
    const rootfs = join(work, "rootfs");
    await flattenLayers(spec.layers, rootfs);
    // One run before the measured ones, so that every size reads its files from the page cache.
    await runOnce(rootfs, work, Math.min(...sizes));
    for (let i = 0; i < runs; i++) {
      for (const size of sizes) {
        const run = fluxAloneRun(size, await runOnce(rootfs, work, size));
        say(`size ${size}, run ${i + 1}: every broker joined in ${ms(run.joinedMs)} s`);
        results.push(run);
      }
    }
  } finally {
    await removeTree(work);
  }
  const table = fluxAloneTable(results);
  const machine = {
    cpus: navigator.hardwareConcurrency,
    load: { start: loadAtStart, end: load() },
  };
  const stem = join(out, `${new Date().toISOString().slice(0, 10)}-flux-alone`);
  await Deno.writeTextFile(
    `${stem}.json`,
    JSON.stringify({ machine, runs: results }, null, 2) + "\n",
  );
  await Deno.writeTextFile(
    `${stem}.txt`,
    `Flux alone: flux start --test-size=N in a chroot of the flux-view image, no Kubernetes ` +
      `(${runs} runs per size, ${machine.cpus} CPUs, load ${loadAtStart} at the start, ` +
      `${machine.load.end} at the end); medians [range], seconds\n${table}\n`,
  );
  console.log(table);
  say(`wrote ${stem}.json and ${stem}.txt`);
  return 0;
}
