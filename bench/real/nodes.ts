// deno task bench --real [--runs=3] [--real-sizes=2,8,16] [--real-contenders=ours-volume,…] —
// broker start-up on the real nodes of the local cluster (`deno task cluster up --real-nodes 2`),
// under this operator with the Flux view mounted and copied, under the Go Flux Operator, and with
// no operator at all (the floor of each design: the children `render` gives, created directly;
// bench/real/contenders.ts).
//
// Each run creates a MiniCluster of the local Flux images pinned to the real nodes whose job is
// `hostname` on every broker, and records, from its create (as `kubectl apply` sends it):
//   pods running   every broker's container running (pods polled every 250 ms)
//   joined         the lead broker logs `quorum-full`: every broker online (bench/real/timeline.ts)
//   first output   the first `hostname` line in the lead broker's log
//   succeeded      the Job's Complete condition (polled every 250 ms)
// Log times are the container runtime's stamps; the local cluster's nodes share the bench's clock.
// The contenders take turns within each size, their order rotating from run to run.
// Once a run is over, before its MiniCluster is deleted, every pod's stamps are read (the pods'
// objects and their brokers' stamped logs, bench/real/pod_stamps.ts) into a waterfall per run
// (bench/real/waterfall.ts): the table of medians and a picture per contender and size.

import { join } from "node:path";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { isAlreadyExists, isNotFound } from "../../runtime/client/errors.ts";
import { Jobs, Pods } from "../../runtime/client/resources.ts";
import { JOB_NAME_LABEL } from "../../controllers/minicluster/children/names.ts";
import { kubectl } from "../../hack/kubectl.ts";
import { createNamespace } from "../cluster_state.ts";
import { summarize as summary } from "../stats.ts";
import {
  benchMiniCluster,
  type RealContender,
  type RealContenderName,
  startRealContender,
} from "./contenders.ts";
import { firstHostnameAt, parseStampedLog, quorumFullAt, type StampedLine } from "./timeline.ts";
import { notePoll, podStamps, type PollBounds, refined } from "./pod_stamps.ts";
import type { WaterfallRun } from "./waterfall.ts";
import { writeWaterfalls } from "./waterfall_files.ts";

const median = (xs: number[]) => summary(xs).p50;
const say = (msg: string) => console.error(`[bench real] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NAMESPACE = "mc-bench-real";
const POLL_MS = 250;
const RUN_DEADLINE_MS = 300_000;

/** Milliseconds from the create to each moment. */
export interface RealRun {
  contender: RealContenderName;
  size: number;
  podsRunningMs: number;
  joinedMs: number;
  firstOutputMs: number;
  succeededMs: number;
}

async function podsOf(client: KubeClient, name: string): Promise<Pod[]> {
  const list = await client.list<Pod>(Pods, {
    namespace: NAMESPACE,
    labelSelector: `${JOB_NAME_LABEL}=${name}`,
  });
  return list.items;
}

const indexOf = (p: Pod) => p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"];
/** The broker's container: the pod's first (the operators put the Flux container first). */
const brokerContainer = (p: Pod) => p.spec!.containers[0].name;

async function waitPodsGone(client: KubeClient, name: string): Promise<void> {
  const deadline = Date.now() + 180_000;
  while ((await podsOf(client, name)).length > 0) {
    if (Date.now() > deadline) throw new Error(`${name}: pods still there 180 s after the delete`);
    await sleep(500);
  }
}

async function brokerLog(kubeconfig: string, pod: Pod): Promise<StampedLine[]> {
  return parseStampedLog(
    await kubectl(kubeconfig, [
      "-n",
      NAMESPACE,
      "logs",
      "--timestamps",
      pod.metadata!.name!,
      "-c",
      brokerContainer(pod),
    ]),
  );
}

async function oneRun(
  client: KubeClient,
  kubeconfig: string,
  contender: RealContender,
  name: string,
  size: number,
  runIndex: number,
): Promise<{ run: RealRun; waterfall: WaterfallRun }> {
  const mc = benchMiniCluster(contender.name, name, NAMESPACE, size);
  const t0 = Date.now();
  await contender.create(mc);
  let podsRunningAt: number | undefined;
  let succeededAt: number | undefined;
  // When each pod's API stamps were first seen and last seen missing: they narrow its whole seconds.
  const bounds = new Map<string, PollBounds>();
  // The Job is complete when the lead's index succeeds, and the Job controller then deletes the
  // followers still running: each pod as last polled, and the log of one being deleted, read then.
  const lastSeen = new Map<string, Pod>();
  const logsOfDeleted = new Map<string, Promise<StampedLine[]>>();
  let previousSentAt: number | undefined;
  while (succeededAt === undefined) {
    if (Date.now() - t0 > RUN_DEADLINE_MS) {
      throw new Error(`${contender.name} ${name}: the Job did not complete in time`);
    }
    const sentAt = Date.now();
    const pods = await podsOf(client, name);
    notePoll(bounds, pods, sentAt, Date.now(), previousSentAt);
    previousSentAt = sentAt;
    for (const p of pods) {
      const podName = p.metadata!.name!;
      lastSeen.set(podName, p);
      if (p.metadata?.deletionTimestamp && !logsOfDeleted.has(podName)) {
        logsOfDeleted.set(podName, brokerLog(kubeconfig, p).catch(() => []));
      }
    }
    if (
      podsRunningAt === undefined && pods.length >= size &&
      pods.every((p) =>
        p.status?.containerStatuses?.some((c) =>
          c.name === brokerContainer(p) && (c.state?.running || c.state?.terminated)
        )
      )
    ) podsRunningAt = Date.now();
    const job = await client.get<Job>(Jobs, NAMESPACE, name).catch((e) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
    if (job?.status?.conditions?.some((c) => c.type === "Complete" && c.status === "True")) {
      succeededAt = Date.now();
    } else if (job?.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True")) {
      throw new Error(`${contender.name} ${name}: the Job failed`);
    }
    await sleep(POLL_MS);
  }
  // Every pod as the API server holds it once the Job is complete, with its broker's log; a pod
  // deleted meanwhile as last polled, with the log read while it was being deleted (or none).
  const remaining = await podsOf(client, name);
  const gone = [...lastSeen.values()].filter((p) =>
    !remaining.some((r) => r.metadata?.name === p.metadata?.name)
  );
  const pods = [...remaining, ...gone];
  const readBefore = (p: Pod) => logsOfDeleted.get(p.metadata!.name!) ?? Promise.resolve([]);
  const logs = await Promise.all([
    ...remaining.map((p) => brokerLog(kubeconfig, p).catch(() => readBefore(p))),
    ...gone.map(readBefore),
  ]);
  const leadAt = pods.findIndex((p) => indexOf(p) === "0");
  if (leadAt < 0) throw new Error(`${contender.name} ${name}: no lead broker pod after completion`);
  const log = logs[leadAt];
  const joinedAt = quorumFullAt(log);
  const firstOutputAt = firstHostnameAt(log, name);
  if (joinedAt === undefined || firstOutputAt === undefined) {
    throw new Error(
      `${contender.name} ${name}: the lead broker's log lacks ${
        joinedAt === undefined ? "quorum-full" : "the job's output"
      }:\n${log.slice(-30).map((l) => l.text).join("\n")}`,
    );
  }
  return {
    run: {
      contender: contender.name,
      size,
      podsRunningMs: (podsRunningAt ?? succeededAt) - t0,
      joinedMs: joinedAt - t0,
      firstOutputMs: firstOutputAt - t0,
      succeededMs: succeededAt - t0,
    },
    waterfall: {
      contender: contender.name,
      size,
      run: runIndex,
      appliedAt: t0,
      pods: pods.map((p, i) =>
        refined(podStamps(p, logs[i]), bounds.get(p.metadata?.name ?? ""), t0)
      ),
      quorumFullAt: joinedAt,
      firstOutputAt,
    },
  };
}

/** The contenders in the order of run `i`: each goes first in turn. */
export function rotation<T>(items: readonly T[], i: number): T[] {
  const k = i % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

export async function realNodesBench(
  kubeconfig: string,
  runs: number,
  sizes: number[],
  contenders: RealContenderName[],
  out: string,
): Promise<number> {
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  await createNamespace(client, NAMESPACE).catch((e) => {
    if (!isAlreadyExists(e)) throw e;
  });
  const logDir = await Deno.makeTempDir({ prefix: "bench-real-" });
  const results: RealRun[] = [];
  const waterfalls: WaterfallRun[] = [];
  // A failed run ends the bench, but the runs before it are still written: a full invocation
  // takes the better part of an hour.
  let failure: unknown;
  try {
    for (const size of sizes) {
      for (let i = 0; i < runs; i++) {
        for (const name of rotation(contenders, i)) {
          // One contender at a time: the Go operator reconciles every namespace, and ours and Go's
          // CRD are the same resource.
          const contender = await startRealContender(name, kubeconfig, NAMESPACE, logDir);
          const mcName = `real-${name}-${size}-${i}`;
          try {
            const { run, waterfall } = await oneRun(client, kubeconfig, contender, mcName, size, i);
            results.push(run);
            waterfalls.push(waterfall);
            say(
              `${name} size ${size} run ${i + 1}/${runs}: pods running ${
                secs(run.podsRunningMs)
              }, ` +
                `joined ${secs(run.joinedMs)}, first output ${secs(run.firstOutputMs)}, ` +
                `succeeded ${secs(run.succeededMs)}`,
            );
          } finally {
            await contender.remove(benchMiniCluster(name, mcName, NAMESPACE, size));
            await waitPodsGone(client, mcName);
            await contender.stop();
          }
        }
      }
    }
  } catch (e) {
    failure = e;
  } finally {
    client.close();
  }
  if (failure !== undefined) {
    say(`stopped after ${results.length} runs: ${failure}`);
    if (results.length === 0) throw failure;
  }
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  const rows = summarize(results, sizes, contenders);
  console.log(
    `real nodes, ${runs} runs per size and contender (load ${load}); medians, seconds from the create`,
  );
  console.log(table(rows));
  const day = new Date().toISOString().slice(0, 10);
  await Deno.mkdir(out, { recursive: true });
  const file = join(out, `${day}-real-startup.json`);
  await Deno.writeTextFile(
    file,
    JSON.stringify({ runs: results, medians: rows, loadAverage: load }, null, 2) + "\n",
  );
  say(`wrote ${file} (operator logs in ${logDir})`);
  const written = await writeWaterfalls(out, day, waterfalls, sizes, contenders, runs, load);
  console.log(written.text);
  say(`wrote ${written.files.join(", ")}`);
  if (failure !== undefined) throw failure;
  return 0;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export interface RealRow {
  size: number;
  contender: RealContenderName;
  podsRunningMs: number;
  joinedMs: number;
  firstOutputMs: number;
  succeededMs: number;
}

export function summarize(
  runs: RealRun[],
  sizes: number[],
  contenders: RealContenderName[],
): RealRow[] {
  const rows: RealRow[] = [];
  for (const size of sizes) {
    for (const contender of contenders) {
      const mine = runs.filter((r) => r.size === size && r.contender === contender);
      if (mine.length === 0) continue;
      const m = (f: (r: RealRun) => number) => median(mine.map(f));
      rows.push({
        size,
        contender,
        podsRunningMs: m((r) => r.podsRunningMs),
        joinedMs: m((r) => r.joinedMs),
        firstOutputMs: m((r) => r.firstOutputMs),
        succeededMs: m((r) => r.succeededMs),
      });
    }
  }
  return rows;
}

export function table(rows: RealRow[]): string {
  const head = "| size | contender | pods running | joined | first output | succeeded |";
  const line = "| ---: | --- | ---: | ---: | ---: | ---: |";
  const s = (ms: number) => (ms / 1000).toFixed(1);
  return [
    head,
    line,
    ...rows.map((r) =>
      `| ${r.size} | ${r.contender} | ${s(r.podsRunningMs)} | ${s(r.joinedMs)} | ` +
      `${s(r.firstOutputMs)} | ${s(r.succeededMs)} |`
    ),
  ].join("\n");
}
