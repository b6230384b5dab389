/**
 * The waterfall of one run: each pod's stamps as consecutive phases on a time axis from the
 * create, and the medians of the runs per phase, contender and size. Pure.
 */
import type { PodStamps } from "./pod_stamps.ts";
import { summarize } from "../stats.ts";

/** One run of `bench --real`, its pods' stamps as collected (epoch milliseconds). */
export interface WaterfallRun {
  contender: string;
  size: number;
  run: number;
  /** The create the run is timed from. */
  appliedAt: number;
  pods: PodStamps[];
  /** The lead broker's `quorum-full`: every broker joined. */
  quorumFullAt?: number;
  /** The job's first output line in the lead broker's log. */
  firstOutputAt?: number;
}

/** The phases in the order a pod goes through them; each ends at its stamp. */
export const PHASES = [
  { key: "scheduled", label: "scheduling", ends: "PodScheduled" },
  { key: "sandbox", label: "sandbox", ends: "PodReadyToStartContainers" },
  { key: "initStart", label: "init start", ends: "the first init container started" },
  { key: "initCopy", label: "init (copy)", ends: "the last init container finished" },
  { key: "containersStart", label: "containers start", ends: "every container started" },
  { key: "brokerUp", label: "broker up", ends: "the broker's first log line" },
  {
    key: "joined",
    label: "joined",
    ends: "a follower's parent-ready, the lead's quorum-full",
  },
  { key: "firstOutput", label: "first output", ends: "the job's first output (lead only)" },
] as const;

export type PhaseKey = (typeof PHASES)[number]["key"];

/** A pod's phase: milliseconds from the create. */
export interface Segment {
  phase: PhaseKey;
  startMs: number;
  endMs: number;
}

/** The stamp each phase ends at. */
function phaseEnds(pod: PodStamps, run: WaterfallRun): Record<PhaseKey, number | undefined> {
  return {
    scheduled: pod.scheduled,
    sandbox: pod.sandboxReady,
    initStart: pod.initStarted,
    initCopy: pod.initFinished,
    containersStart: pod.containersStarted,
    brokerUp: pod.brokerUp,
    joined: pod.joined,
    firstOutput: pod.index === 0 ? run.firstOutputAt : undefined,
  };
}

/**
 * A pod's phases, in order, from its creation: each from where the one before ended to its stamp.
 * A missing stamp (no init container with the image volume) leaves its phase out. A stamp earlier
 * than the phase before's end (the API's whole seconds against the log's nanoseconds) ends its
 * phase where it starts: the phases never overlap or go back.
 */
export function podSegments(pod: PodStamps, run: WaterfallRun): Segment[] {
  if (pod.created === undefined) return [];
  const ends = phaseEnds(pod, run);
  const segments: Segment[] = [];
  let from = pod.created - run.appliedAt;
  for (const { key } of PHASES) {
    const end = ends[key];
    if (end === undefined) continue;
    const endMs = Math.max(from, end - run.appliedAt);
    segments.push({ phase: key, startMs: from, endMs });
    from = endMs;
  }
  return segments;
}

/** A run's pods in rank order. */
export const byIndex = (pods: readonly PodStamps[]): PodStamps[] =>
  [...pods].sort((a, b) => a.index - b.index);

/** Per phase: its median length over the pods, and when the last pod ended it (from the create). */
export interface PhaseFigures {
  medianMs?: number;
  lastEndMs?: number;
}

export interface RunFigures {
  phases: Partial<Record<PhaseKey, PhaseFigures>>;
  /** From the last pod's containers started to every broker joined (quorum-full). */
  lastContainerToJoinedMs?: number;
  joinedMs?: number;
  firstOutputMs?: number;
}

const median = (xs: number[]) => xs.length > 0 ? summarize(xs).p50 : undefined;

export function runFigures(run: WaterfallRun): RunFigures {
  const perPod = run.pods.map((p) => podSegments(p, run));
  const phases: Partial<Record<PhaseKey, PhaseFigures>> = {};
  for (const { key } of PHASES) {
    const mine = perPod.flatMap((segs) => segs.filter((s) => s.phase === key));
    if (mine.length === 0) continue;
    phases[key] = {
      medianMs: median(mine.map((s) => s.endMs - s.startMs)),
      lastEndMs: Math.max(...mine.map((s) => s.endMs)),
    };
  }
  const started = run.pods.map((p) => p.containersStarted);
  const lastStarted = started.every((s) => s !== undefined) && started.length > 0
    ? Math.max(...(started as number[]))
    : undefined;
  const rel = (t?: number) => t === undefined ? undefined : t - run.appliedAt;
  return {
    phases,
    lastContainerToJoinedMs: lastStarted !== undefined && run.quorumFullAt !== undefined
      ? run.quorumFullAt - lastStarted
      : undefined,
    joinedMs: rel(run.quorumFullAt),
    firstOutputMs: rel(run.firstOutputAt),
  };
}

/** The medians of the runs of one contender at one size. */
export interface WaterfallRow {
  contender: string;
  size: number;
  runs: number;
  phases: Partial<Record<PhaseKey, PhaseFigures>>;
  lastContainerToJoinedMs?: number;
  joinedMs?: number;
  firstOutputMs?: number;
}

/** Medians of the runs' figures, per size then contender in the given orders. */
export function waterfallTable(
  runs: readonly WaterfallRun[],
  sizes: readonly number[],
  contenders: readonly string[],
): WaterfallRow[] {
  const rows: WaterfallRow[] = [];
  for (const size of sizes) {
    for (const contender of contenders) {
      const figures = runs.filter((r) => r.size === size && r.contender === contender).map(
        runFigures,
      );
      if (figures.length === 0) continue;
      const m = (f: (r: RunFigures) => number | undefined) =>
        median(figures.map(f).filter((x): x is number => x !== undefined));
      const phases: Partial<Record<PhaseKey, PhaseFigures>> = {};
      for (const { key } of PHASES) {
        if (!figures.some((f) => f.phases[key])) continue;
        phases[key] = {
          medianMs: m((f) => f.phases[key]?.medianMs),
          lastEndMs: m((f) => f.phases[key]?.lastEndMs),
        };
      }
      rows.push({
        contender,
        size,
        runs: figures.length,
        phases,
        lastContainerToJoinedMs: m((f) => f.lastContainerToJoinedMs),
        joinedMs: m((f) => f.joinedMs),
        firstOutputMs: m((f) => f.firstOutputMs),
      });
    }
  }
  return rows;
}

const s = (ms?: number) => ms === undefined ? "" : (ms / 1000).toFixed(2);

/**
 * The table as Markdown: per phase the median pod's length and, after the slash, when the last pod
 * ended it, in seconds from the create; then the last container start → every broker joined.
 */
export function waterfallText(rows: readonly WaterfallRow[]): string {
  const head = `| size | contender | ${
    PHASES.map((p) => p.label).join(" | ")
  } | last container → joined | joined | first output |`;
  const line = `| ---: | --- | ${PHASES.map(() => "---:").join(" | ")} | ---: | ---: | ---: |`;
  return [
    head,
    line,
    ...rows.map((r) =>
      `| ${r.size} | ${r.contender} | ${
        PHASES.map(({ key }) => {
          const f = r.phases[key];
          return f ? `${s(f.medianMs)} / ${s(f.lastEndMs)}` : "";
        }).join(" | ")
      } | ${s(r.lastContainerToJoinedMs)} | ${s(r.joinedMs)} | ${s(r.firstOutputMs)} |`
    ),
  ].join("\n");
}

/** The run a picture shows: the one whose every-broker-joined is the median of its runs. */
export function medianRun(runs: readonly WaterfallRun[]): WaterfallRun | undefined {
  const sorted = [...runs].sort((a, b) =>
    (a.quorumFullAt ?? Infinity) - a.appliedAt - ((b.quorumFullAt ?? Infinity) - b.appliedAt)
  );
  return sorted[Math.ceil(sorted.length / 2) - 1];
}
