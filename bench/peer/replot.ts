/**
 * The side-by-side plot (report.ts's `peerPlot`) drawn again from result files that exist, for a
 * comparison that no single invocation holds: runs picked from several `<date>-peer-*.json`, by
 * operator and N. Nothing is run or measured; the merged results, with a note naming where each
 * run came from (and the Kubernetes version it ran on), are written beside the plot.
 *
 *   deno run --allow-read --allow-write bench/peer/replot.ts --out=bench/results/NAME \
 *     bench/results/A.json#ours@1000 bench/results/A.json#go@1000 bench/results/B.json#go@10000
 *
 * A source is `FILE.json`, `FILE.json#OPERATOR` or `FILE.json#OPERATOR@N` (OPERATOR: ours, go).
 * Writes `NAME.svg` and `NAME.json`.
 */
import { basename } from "node:path";
import { parseArgs } from "node:util";
import type { ContenderName } from "./contenders.ts";
import { peerPlot, type PeerResults } from "./report.ts";

/** Which runs of one result file to take. */
export interface Source {
  file: string;
  operator?: ContenderName;
  miniClusters?: number;
}

/** `FILE.json[#OPERATOR[@N]]` → a Source; throws on anything else. */
export function parseSource(text: string): Source {
  const m = /^([^#]+\.json)(?:#(ours|go)(?:@(\d+))?)?$/.exec(text);
  if (!m) throw new Error(`not a source (FILE.json[#ours|go[@N]]): ${text}`);
  return {
    file: m[1],
    ...(m[2] ? { operator: m[2] as ContenderName } : {}),
    ...(m[3] ? { miniClusters: Number(m[3]) } : {}),
  };
}

/**
 * The runs each source selects, from its file's results, as one document: its date is the newest
 * source's, its notes say which run came from which file and Kubernetes version. Throws when a
 * source selects nothing, so a typo cannot drop a series silently.
 */
export function mergeRuns(picked: { source: Source; results: PeerResults }[]): PeerResults {
  const runs: PeerResults["runs"] = [];
  const notes: string[] = [];
  for (const { source, results } of picked) {
    const chosen = results.runs.filter((r) =>
      (source.operator === undefined || r.operator === source.operator) &&
      (source.miniClusters === undefined || r.miniClusters === source.miniClusters)
    );
    if (chosen.length === 0) throw new Error(`${describe(source)} selects no run`);
    runs.push(...chosen);
    const kubernetes = String(results.machine.kubernetes ?? "unknown");
    for (const r of chosen) {
      notes.push(
        `${r.operator} at N=${r.miniClusters}: ${basename(source.file)} ` +
          `(${results.date}, Kubernetes ${kubernetes})`,
      );
    }
  }
  const dates = picked.map((p) => p.results.date).sort();
  return {
    date: dates[dates.length - 1],
    machine: { replottedFrom: picked.map((p) => describe(p.source)) },
    notes,
    runs,
  };
}

function describe(s: Source): string {
  return `${s.file}${s.operator ? `#${s.operator}` : ""}${
    s.miniClusters !== undefined ? `@${s.miniClusters}` : ""
  }`;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: { out: { type: "string" } },
  });
  if (!values.out || positionals.length === 0) {
    console.error("usage: replot.ts --out=bench/results/NAME FILE.json[#ours|go[@N]]...");
    Deno.exit(2);
  }
  const picked = await Promise.all(positionals.map(async (text) => {
    const source = parseSource(text);
    return { source, results: JSON.parse(await Deno.readTextFile(source.file)) as PeerResults };
  }));
  const merged = mergeRuns(picked);
  await Deno.writeTextFile(`${values.out}.svg`, peerPlot(merged));
  await Deno.writeTextFile(`${values.out}.json`, JSON.stringify(merged, null, 2) + "\n");
  console.error(`wrote ${values.out}.svg and .json:\n  ${merged.notes.join("\n  ")}`);
}
