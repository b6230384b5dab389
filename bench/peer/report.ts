/**
 * The comparison's report: both operators side by side with ratios (ours / go), per N; the JSON
 * and an SVG plot of both against N. Pure. Repetitions of one N are averaged (median would need
 * more than the two repetitions a run usually has).
 */
import { lineChart, type Series } from "../svg.ts";
import { ratio, round } from "../stats.ts";
import { total, writes } from "./audit.ts";
import type { ContenderName } from "./contenders.ts";
import type { PeerRun } from "./run.ts";

export interface PeerResults {
  date: string;
  machine: Record<string, unknown>;
  notes: string[];
  runs: PeerRun[];
}

type Row = [string, (r: PeerRun) => number, (x: number) => string];

const sec = (ms: number) => Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : "not reached";
const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const num = (x: number) => String(round(x));
const perMin = (r: PeerRun, count: number) => (count * 60_000) / r.idle.windowMs;

const ROWS: Row[] = [
  ["the user's creates returned", (r) => r.createsMs, sec],
  ["operator writes during them", (r) => r.duringCreates ? writes(r.duringCreates) : NaN, num],
  ["all children", (r) => r.allChildrenMs, sec],
  ["children p50 per MiniCluster", (r) => r.childrenMs.p50, sec],
  ["children p99 per MiniCluster", (r) => r.childrenMs.p99, sec],
  ["MiniClusters with every pod Ready", (r) => r.readyMiniClusters, num],
  ["all pods Ready", (r) => r.allReadyMs, sec],
  ["Ready p50 per MiniCluster", (r) => r.readyMs.p50, sec],
  ["Ready p99 per MiniCluster", (r) => r.readyMs.p99, sec],
  ["requests per MiniCluster", (r) => r.requestsPerMiniCluster, num],
  ["writes per MiniCluster", (r) => r.writesPerMiniCluster, num],
  ["CPU seconds (creates to Ready)", (r) => r.cpuSeconds, num],
  ["apiserver + etcd CPU seconds", (r) => r.controlPlaneCpuSeconds, num],
  ["RSS at the end", (r) => r.rssEndBytes, mib],
  ["RSS after the idle window", (r) => r.idle.rssBytes, mib],
  ["idle requests per minute", (r) => perMin(r, total(r.idle.requests)), num],
  ["idle writes per minute", (r) => perMin(r, writes(r.idle.requests)), num],
];

function mean(runs: PeerRun[], f: (r: PeerRun) => number): number {
  return runs.reduce((a, r) => a + f(r), 0) / runs.length;
}

function of(results: PeerResults, op: ContenderName, n: number): PeerRun[] {
  return results.runs.filter((r) => r.operator === op && r.miniClusters === n);
}

function sizes(results: PeerResults): number[] {
  return [...new Set(results.runs.map((r) => r.miniClusters))].sort((a, b) => a - b);
}

/** ours / go of a measure at N (means over repetitions). */
function peerRatio(results: PeerResults, n: number, f: (r: PeerRun) => number): number {
  return ratio(mean(of(results, "ours", n), f), mean(of(results, "go", n), f));
}

export function formatPeerReport(results: PeerResults): string {
  const out: string[] = [`MiniCluster Operator vs the Go Flux Operator — ${results.date}`];
  out.push(`machine: ${JSON.stringify(results.machine)}`);
  for (const n of sizes(results)) {
    const o = of(results, "ours", n);
    const g = of(results, "go", n);
    out.push("", `N=${n} (size ${o[0]?.size ?? g[0]?.size}; ${o.length} + ${g.length} runs)`);
    out.push(
      `${"measure".padEnd(34)} ${"ours".padStart(12)} ${"go".padStart(12)} ${
        "ours/go".padStart(8)
      }`,
    );
    for (const [label, f, fmt] of ROWS) {
      const a = o.length ? mean(o, f) : NaN;
      const b = g.length ? mean(g, f) : NaN;
      out.push(
        `${label.padEnd(34)} ${fmt(a).padStart(12)} ${fmt(b).padStart(12)} ${
          ratio(a, b).toFixed(2).padStart(8)
        }`,
      );
    }
    out.push(
      `peer ratio all-children (ours/go): ${
        peerRatio(results, n, (r) => r.allChildrenMs).toFixed(2)
      }` +
        ` (N=${n})`,
    );
    for (const [name, runs] of [["ours", o], ["go", g]] as const) {
      const apf: Record<string, [number, number]> = runs[0]?.apf ?? {};
      out.push(
        `  ${name} run, API Priority and Fairness (dispatched, seconds queued): ` +
          Object.entries(apf).map(([k, [d, w]]) => `${k} ${d} ${w}`).join("; "),
      );
      const byKey: Record<string, number> = {};
      for (const r of runs) {
        for (const [k, v] of Object.entries(r.requests)) {
          byKey[k] = (byKey[k] ?? 0) + v / runs.length;
        }
      }
      const top = Object.entries(byKey).sort((a, b) => b[1] - a[1]).slice(0, 10);
      out.push(
        `  ${name} requests by verb and resource: ` +
          top.map(([k, v]) => `${k} ${round(v / n)}`).join(", ") + " (per MiniCluster)",
      );
    }
  }
  out.push("", ...results.notes.map((x) => `note: ${x}`));
  return out.join("\n");
}

/** Both operators against N: all-children time, writes per MiniCluster and RSS, one panel each. */
export function peerPlot(results: PeerResults): string {
  const ns = sizes(results);
  const series = (op: ContenderName, f: (r: PeerRun) => number, label: string): Series => ({
    label: `${op === "ours" ? "ours" : "Go operator"} ${label}`,
    points: ns.filter((n) => of(results, op, n).length).map((
      n,
    ) => [n, mean(of(results, op, n), f)]),
  });
  const panel = (f: (r: PeerRun) => number, label: string, title: string, yLabel: string) =>
    lineChart([series("ours", f, label), series("go", f, label)], {
      title,
      xLabel: "MiniClusters (N)",
      yLabel,
      height: 300,
    });
  const panels = [
    panel((r) => r.allChildrenMs / 1000, "", "All children created (s) against N", "seconds"),
    panel((r) => r.writesPerMiniCluster, "", "Writes per MiniCluster against N", "writes"),
    panel((r) => r.idle.rssBytes / 2 ** 20, "", "RSS after the idle window (MiB) against N", "MiB"),
  ];
  // Stacks the three charts in one SVG document.
  const inner = panels.map((svg, i) =>
    svg.replace(/^<svg [^>]*>/, `<g transform="translate(0 ${i * 300})">`).replace(
      /<\/svg>\n$/,
      "</g>",
    )
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="720" height="900" viewBox="0 0 720 900" ` +
    `font-family="sans-serif" font-size="12">\n${inner.join("\n")}\n</svg>\n`;
}
