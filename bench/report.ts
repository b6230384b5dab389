// What `deno task bench` reports: the result document (written as JSON), its table, and its plot.
// Pure functions of the result, unit-tested.

import { round, type Summary } from "./stats.ts";
import { cdfPoints, lineChart, type Series } from "./svg.ts";

/** One N: N MiniClusters created at once and followed to Ready. */
export interface ScaleRun {
  miniClusters: number;
  size: number;
  /** The operator's --concurrency, also the raw client's. */
  concurrency: number;
  /** Per MiniCluster, from its create returning to every child seen (ms). */
  childrenMs: Summary;
  /** Per MiniCluster, from its create returning to Ready=True seen (ms). */
  readyMs: Summary;
  /** From the first create to the last MiniCluster with all children (ms). */
  allChildrenMs: number;
  /** From the first create to the last MiniCluster Ready (ms). */
  allReadyMs: number;
  /**
   * The same run by a raw client instead of the operator (same MiniCluster creates, same children,
   * same concurrency, same pods): from the first create to the last MiniCluster with all children (ms).
   */
  rawClientMs: number;
  /** allChildrenMs / rawClientMs. */
  operatorToRawRatio: number;
  /** Operator API requests per MiniCluster, by verb. */
  requestsPerMiniCluster: Record<string, number>;
  /** Operator writes per MiniCluster, by "verb resource". */
  writesPerMiniClusterByResource: Record<string, number>;
  readsPerMiniCluster: number;
  writesPerMiniCluster: number;
  minimumWritesPerMiniCluster: number;
  /** Reconciles per MiniCluster until all were Ready. */
  reconcilesPerMiniCluster: number;
  operatorCpuSeconds: number;
  /** Raw samples for the plot. */
  samples: { childrenMs: number[]; readyMs: number[] };
}

export interface IdleRun {
  miniClusters: number;
  windowMs: number;
  writesPerMinute: number;
  reconcilesPerMinute: number;
  requestsPerMinuteByVerb: Record<string, number>;
  cpuPercent: number;
}

export interface ResourcePoint {
  miniClusters: number;
  /** Pods present in the watched namespaces at the time. */
  pods: number;
  rssBytes: number;
  /** Of rssBytes: the process's own memory (the rest is mapped file pages: the executable's code). */
  rssAnonBytes?: number;
  /** CPU use averaged over the idle window before the reading (% of one core). */
  idleCpuPercent: number;
  /** Spawn to /readyz 200 (every cache synced) for a process started with this many present. */
  startupToSyncedMs: number;
  /** Writes by that freshly started process until every MiniCluster was reconciled once. */
  writesAfterRestart?: number;
}

export interface BenchResults {
  date: string;
  machine: {
    cpus: number;
    memoryBytes: number;
    deno: string;
    kubernetes: string;
    /** 1-minute load average when the run started and ended. */
    loadAverage?: { start: number; end: number };
  };
  notes: string[];
  runs: ScaleRun[];
  idle?: IdleRun;
  resources: ResourcePoint[];
  targets: TargetCheck[];
}

export interface TargetCheck {
  target: string;
  value: string;
  met: boolean;
}

const MIB = 1024 * 1024;
const fmt = (x: number) => String(round(x));
const sec = (ms: number) => fmt(ms / 1000);

/** Columns padded to their widest cell; the first column left-aligned, the rest right-aligned. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])).join("  ")
      .trimEnd();
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join(
    "\n",
  );
}

/** Checks the issue's targets against the results. */
export function checkTargets(r: Omit<BenchResults, "targets">): TargetCheck[] {
  const out: TargetCheck[] = [];
  for (const run of r.runs) {
    out.push({
      target: `writes per MiniCluster = minimum (N=${run.miniClusters})`,
      value: `${fmt(run.writesPerMiniCluster)} vs ${run.minimumWritesPerMiniCluster}`,
      met: run.writesPerMiniCluster <= run.minimumWritesPerMiniCluster,
    });
    out.push({
      target: `all-children time ≤ 1.1× raw client (N=${run.miniClusters})`,
      value: `${fmt(run.operatorToRawRatio)}×`,
      met: run.operatorToRawRatio <= 1.1,
    });
  }
  if (r.idle) {
    out.push({
      target: `idle writes = 0 (N=${r.idle.miniClusters})`,
      value: `${fmt(r.idle.writesPerMinute)}/min`,
      met: r.idle.writesPerMinute === 0,
    });
  }
  const at1000 = r.resources.find((p) => p.miniClusters === 1000);
  if (at1000) {
    out.push({
      target: "RSS ≤ 60 MiB at 1,000 MiniClusters",
      value: `${fmt(at1000.rssBytes / MIB)} MiB` +
        (at1000.rssAnonBytes === undefined ? "" : ` (${fmt(at1000.rssAnonBytes / MIB)} anonymous)`),
      met: at1000.rssBytes <= 60 * MIB,
    });
  }
  return out;
}

/** The human-readable report printed at the end of a run. */
export function formatReport(r: BenchResults): string {
  const parts: string[] = [];
  parts.push(
    `MiniCluster operator benchmark, ${r.date} (${r.machine.cpus} CPUs, ${
      fmt(r.machine.memoryBytes / 1024 / MIB)
    } GiB, Deno ${r.machine.deno}, Kubernetes ${r.machine.kubernetes}${
      r.machine.loadAverage
        ? `, load average ${r.machine.loadAverage.start} → ${r.machine.loadAverage.end}`
        : ""
    })`,
  );
  if (r.runs.length > 0) {
    parts.push(
      "",
      "Creation (per MiniCluster, from its create to all children / to Ready; seconds)",
      formatTable(
        [
          "N",
          "size",
          "children p50",
          "p99",
          "Ready p50",
          "p99",
          "all children",
          "all Ready",
          "raw client",
          "ratio",
          "op CPU s",
        ],
        r.runs.map((x) => [
          String(x.miniClusters),
          String(x.size),
          sec(x.childrenMs.p50),
          sec(x.childrenMs.p99),
          sec(x.readyMs.p50),
          sec(x.readyMs.p99),
          sec(x.allChildrenMs),
          sec(x.allReadyMs),
          sec(x.rawClientMs),
          `${fmt(x.operatorToRawRatio)}×`,
          fmt(x.operatorCpuSeconds),
        ]),
      ),
    );
    const verbs = [...new Set(r.runs.flatMap((x) => Object.keys(x.requestsPerMiniCluster)))]
      .sort();
    parts.push(
      "",
      "API requests per MiniCluster by verb (operator's api_requests_total)",
      formatTable(
        ["N", ...verbs, "reads", "writes", "min writes", "reconciles"],
        r.runs.map((x) => [
          String(x.miniClusters),
          ...verbs.map((v) => fmt(x.requestsPerMiniCluster[v] ?? 0)),
          fmt(x.readsPerMiniCluster),
          fmt(x.writesPerMiniCluster),
          String(x.minimumWritesPerMiniCluster),
          fmt(x.reconcilesPerMiniCluster),
        ]),
      ),
    );
    const last = r.runs[r.runs.length - 1];
    parts.push(
      "",
      `Writes per MiniCluster by resource (N=${last.miniClusters})`,
      formatTable(
        ["write", "per MiniCluster"],
        Object.entries(last.writesPerMiniClusterByResource).sort().map(([k, v]) => [k, fmt(v)]),
      ),
    );
  }
  if (r.idle) {
    parts.push(
      "",
      `Idle with ${r.idle.miniClusters} MiniClusters over ${sec(r.idle.windowMs)} s`,
      formatTable(["writes/min", "reconciles/min", "CPU %"], [[
        fmt(r.idle.writesPerMinute),
        fmt(r.idle.reconcilesPerMinute),
        fmt(r.idle.cpuPercent),
      ]]),
    );
  }
  if (r.resources.length > 0) {
    parts.push(
      "",
      "Operator process",
      formatTable(
        [
          "MiniClusters",
          "pods",
          "RSS MiB",
          "of it anon MiB",
          "idle CPU %",
          "start-up to synced s",
          "writes after restart",
        ],
        r.resources.map((p) => [
          String(p.miniClusters),
          String(p.pods),
          fmt(p.rssBytes / MIB),
          p.rssAnonBytes === undefined ? "-" : fmt(p.rssAnonBytes / MIB),
          fmt(p.idleCpuPercent),
          sec(p.startupToSyncedMs),
          p.writesAfterRestart === undefined ? "-" : String(p.writesAfterRestart),
        ]),
      ),
    );
  }
  if (r.targets.length > 0) {
    parts.push(
      "",
      "Targets",
      formatTable(
        ["target", "value", "met"],
        r.targets.map((t) => [t.target, t.value, t.met ? "yes" : "NO"]),
      ),
    );
  }
  if (r.notes.length > 0) parts.push("", "Notes", ...r.notes.map((n) => `- ${n}`));
  return parts.join("\n") + "\n";
}

/** The CDF plot of per-MiniCluster latencies for every N. */
export function latencyPlot(r: BenchResults): string {
  const series: Series[] = [];
  for (const run of r.runs) {
    const toSeconds = (xs: number[]) => cdfPoints(xs.map((x) => x / 1000));
    series.push({
      label: `N=${run.miniClusters} all children`,
      points: toSeconds(run.samples.childrenMs),
    });
    series.push({ label: `N=${run.miniClusters} Ready`, points: toSeconds(run.samples.readyMs) });
  }
  return lineChart(series, {
    title: "MiniCluster creation latency (CDF per MiniCluster)",
    xLabel: "seconds from create",
    yLabel: "fraction of MiniClusters",
    yMax: 1,
    steps: true,
  });
}

/** RSS against MiniClusters present. */
export function memoryPlot(r: BenchResults): string {
  const sorted = [...r.resources].sort((a, b) => a.miniClusters - b.miniClusters);
  const points = sorted.map((p) => [p.miniClusters, p.rssBytes / MIB] as [number, number]);
  const anon = sorted.filter((p) => p.rssAnonBytes !== undefined)
    .map((p) => [p.miniClusters, p.rssAnonBytes! / MIB] as [number, number]);
  const series = [{ label: "operator RSS", points }];
  if (anon.length) series.push({ label: "of it anonymous (not executable pages)", points: anon });
  return lineChart(series, {
    title: "Operator resident memory",
    xLabel: "MiniClusters present",
    yLabel: "RSS (MiB)",
  });
}

/** The result document as JSON; fractional numbers rounded to one decimal (0.1 ms, 0.1 B). */
export function toJson(r: BenchResults): string {
  return JSON.stringify(
    r,
    (_k, v) => typeof v === "number" && !Number.isInteger(v) ? Math.round(v * 10) / 10 : v,
    2,
  ) + "\n";
}
