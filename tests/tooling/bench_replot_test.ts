// bench/peer/replot.ts: the side-by-side plot drawn again from result files, and the README's
// plot, which must be that drawing of the runs its table cites.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { mergeRuns, parseSource, type Source } from "../../bench/peer/replot.ts";
import { peerPlot, type PeerResults } from "../../bench/peer/report.ts";
import type { PeerRun } from "../../bench/peer/run.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

Deno.test("replot: a source is a file, optionally an operator and N", () => {
  assert.deepEqual(parseSource("a/b.json"), { file: "a/b.json" });
  assert.deepEqual(parseSource("b.json#go"), { file: "b.json", operator: "go" });
  assert.deepEqual(parseSource("b.json#ours@10000"), {
    file: "b.json",
    operator: "ours",
    miniClusters: 10000,
  });
  assert.throws(() => parseSource("b.json#kueue"), /not a source/);
  assert.throws(() => parseSource("b.txt"), /not a source/);
});

Deno.test("replot: picks the runs each source selects and says where each came from", () => {
  const run = (operator: "ours" | "go", miniClusters: number) =>
    ({ operator, miniClusters, size: 1 }) as PeerRun;
  const results = (date: string, kubernetes: string, runs: PeerRun[]): PeerResults => ({
    date,
    machine: { kubernetes },
    notes: [],
    runs,
  });
  const a = results("2026-11-27", "v1.37.2", [run("ours", 1000), run("go", 1000)]);
  const b = results("2026-11-24", "v1.33.13", [run("ours", 10000), run("go", 10000)]);
  const merged = mergeRuns([
    { source: { file: "x/a.json" }, results: a },
    { source: { file: "x/b.json", operator: "go", miniClusters: 10000 }, results: b },
  ]);
  assert.deepEqual(
    merged.runs.map((r) => `${r.operator}@${r.miniClusters}`),
    ["ours@1000", "go@1000", "go@10000"],
  );
  assert.equal(merged.date, "2026-11-27");
  assert.deepEqual(merged.notes, [
    "ours at N=1000: a.json (2026-11-27, Kubernetes v1.37.2)",
    "go at N=1000: a.json (2026-11-27, Kubernetes v1.37.2)",
    "go at N=10000: b.json (2026-11-24, Kubernetes v1.33.13)",
  ]);
  assert.throws(
    () =>
      mergeRuns([{ source: { file: "b.json", operator: "ours", miniClusters: 100 }, results: b }]),
    /b\.json#ours@100 selects no run/,
  );
});

Deno.test("replot: the README's plot is the drawing of the runs its performance table cites", async () => {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const plot = /!\[[^\]]*\]\((bench\/results\/([^)]+)\.svg)\)/.exec(readme);
  assert.ok(plot, "the README embeds a plot");
  const merged = JSON.parse(
    await Deno.readTextFile(`${ROOT}bench/results/${plot[2]}.json`),
  ) as PeerResults & { machine: { replottedFrom: string[] } };
  // Drawn again from the sources it names, the plot is byte for byte the committed one.
  const sources: Source[] = merged.machine.replottedFrom.map(parseSource);
  const picked = await Promise.all(sources.map(async (source) => ({
    source,
    results: JSON.parse(await Deno.readTextFile(`${ROOT}${source.file}`)) as PeerResults,
  })));
  assert.equal(peerPlot(mergeRuns(picked)), await Deno.readTextFile(`${ROOT}${plot[1]}`));
  // And the table cites every file the plot is drawn from.
  for (const source of sources) {
    const stem = source.file.replace(/^bench\/results\//, "").replace(/\.json$/, "");
    assert.ok(readme.includes(stem), `the README does not cite ${stem}`);
  }
});
