// The pure parts of the benchmark and e2e tooling: statistics, the /metrics reader, /proc parsing,
// the report table, JSON and SVG.
import assert from "node:assert/strict";
import { perMinute, quantile, ratio, round, summarize } from "../../bench/stats.ts";
import { cdfPoints, escapeXml, lineChart, niceTicks } from "../../bench/svg.ts";
import { ChangeWaiter } from "../../bench/change_waiter.ts";
import {
  type BenchResults,
  checkTargets,
  formatReport,
  formatTable,
  latencyPlot,
  memoryPlot,
  type ScaleRun,
  toJson,
} from "../../bench/report.ts";
import {
  diffCounts,
  groupBy,
  parseMetrics,
  sumOf,
  writeCount,
} from "../../testing/metrics_text.ts";
import {
  parseCpuSeconds,
  parseRssSplit,
  parseVmRss,
  servingPort,
} from "../../testing/operator_process.ts";

Deno.test("quantile: nearest rank, always an observed sample", () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100
  assert.equal(quantile(xs, 0.5), 50);
  assert.equal(quantile(xs, 0.99), 99);
  assert.equal(quantile(xs, 1), 100);
  assert.equal(quantile(xs, 0), 1);
  assert.equal(quantile([7], 0.99), 7);
  assert.equal(quantile([1, 2, 3], 0.5), 2);
  assert.equal(quantile([1, 2, 3, 4], 0.5), 2);
  assert.ok(Number.isNaN(quantile([], 0.5)));
});

Deno.test("summarize: unsorted input, non-finite samples dropped", () => {
  const s = summarize([30, 10, 20, NaN, 40, Infinity]);
  assert.deepEqual(s, { count: 4, min: 10, p50: 20, p90: 40, p99: 40, max: 40, mean: 25 });
  const empty = summarize([]);
  assert.equal(empty.count, 0);
  assert.ok(Number.isNaN(empty.p50));
});

Deno.test("rates, ratios and rounding", () => {
  assert.equal(perMinute(10, 30_000), 20);
  assert.ok(Number.isNaN(perMinute(1, 0)));
  assert.equal(ratio(3, 2), 1.5);
  assert.ok(Number.isNaN(ratio(1, 0)));
  assert.equal(round(1234.56), 1235);
  assert.equal(round(12.345), 12.3);
  assert.equal(round(1.23456), 1.235);
  assert.equal(round(0), 0);
});

const METRICS = `# HELP api_requests_total Requests to the Kubernetes API.
# TYPE api_requests_total counter
api_requests_total{verb="list",resource="pods",code="200"} 6
api_requests_total{verb="watch",resource="pods",code="200"} 6
api_requests_total{verb="apply",resource="jobs.batch",code="200"} 3
api_requests_total{verb="apply",resource="miniclusters.flux-framework.org/status",code="200"} 4
api_requests_total{verb="create",resource="events",code="201"} 2
api_requests_total{verb="patch",resource="miniclusters.flux-framework.org",code="409"} 1
reconcile_total{controller="minicluster",result="success"} 12
weird_label{path="a \\"quoted\\" \\\\ value\\n"} 1.5e3
process_resident_memory_bytes 4.2e+07
histogram_bucket{le="+Inf"} +Inf
`;

Deno.test("parseMetrics: labels, escapes, exponents, +Inf; comments skipped", () => {
  const samples = parseMetrics(METRICS);
  assert.equal(samples.length, 10);
  assert.deepEqual(samples[0], {
    name: "api_requests_total",
    labels: { verb: "list", resource: "pods", code: "200" },
    value: 6,
  });
  const weird = samples.find((s) => s.name === "weird_label")!;
  assert.equal(weird.labels.path, 'a "quoted" \\ value\n');
  assert.equal(weird.value, 1500);
  assert.equal(sumOf(samples, "process_resident_memory_bytes"), 42_000_000);
  assert.equal(samples.find((s) => s.name === "histogram_bucket")!.value, Infinity);
});

Deno.test("sumOf, groupBy, writeCount, diffCounts", () => {
  const samples = parseMetrics(METRICS);
  assert.equal(sumOf(samples, "api_requests_total", { verb: "apply" }), 7);
  assert.equal(sumOf(samples, "api_requests_total", { verb: ["get", "list", "watch"] }), 12);
  assert.equal(writeCount(samples), 10, "apply + create + patch, failed ones included");
  assert.deepEqual(groupBy(samples, "api_requests_total", "verb"), {
    list: 6,
    watch: 6,
    apply: 7,
    create: 2,
    patch: 1,
  });
  assert.deepEqual(diffCounts({ a: 1, b: 2 }, { b: 5, c: 1 }), { a: -1, b: 3, c: 1 });
});

Deno.test("/proc parsing: VmRSS and utime+stime, a command name with spaces and parens", () => {
  assert.equal(parseVmRss("Name:\tdeno\nVmRSS:\t   51200 kB\nVmSwap:\t0 kB\n"), 51200 * 1024);
  assert.throws(() => parseVmRss("Name: x\n"));
  assert.deepEqual(
    parseRssSplit(
      "VmRSS:\t  58296 kB\nRssAnon:\t   17300 kB\nRssFile:\t   40996 kB\nRssShmem:\t 0 kB\n",
    ),
    { anonBytes: 17300 * 1024, fileBytes: 40996 * 1024 },
  );
  const stat = "1234 (de no) (x)) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 9 0 " +
    "100 1000000 2000 18446744073709551615";
  assert.equal(parseCpuSeconds(stat), 3);
});

Deno.test("servingPort: from the operator's JSON log record only", () => {
  const line = JSON.stringify({
    level: "info",
    msg: "serving /healthz, /readyz and /metrics",
    address: "127.0.0.1:41234",
  });
  assert.equal(servingPort(line), 41234);
  assert.equal(servingPort('{"msg":"caches synced"}'), undefined);
  assert.equal(servingPort("not json /metrics"), undefined);
});

Deno.test("formatTable aligns columns", () => {
  const t = formatTable(["name", "n"], [["a", "1"], ["long name", "100"]]);
  assert.equal(
    t,
    ["name         n", "---------  ---", "a            1", "long name  100"].join("\n"),
  );
});

Deno.test("niceTicks and cdfPoints", () => {
  assert.deepEqual(niceTicks(9.3), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(niceTicks(1), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(niceTicks(0), [0, 1]);
  assert.deepEqual(cdfPoints([3, 1, 2, 4]), [[1, 0.25], [2, 0.5], [3, 0.75], [4, 1]]);
});

Deno.test("lineChart: well-formed SVG, one path per series, escaped labels", () => {
  const svg = lineChart([
    { label: "a <b>", points: [[0, 0], [1, 1], [2, 4]] },
    { label: "c & d", points: [[0, 1], [2, 2]] },
  ], { title: "t", xLabel: "x", yLabel: "y", steps: true });
  assert.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
  assert.ok(svg.trimEnd().endsWith("</svg>"));
  assert.equal(svg.match(/<path /g)?.length, 2);
  assert.ok(svg.includes("a &lt;b&gt;") && svg.includes("c &amp; d"));
  assert.ok(!svg.includes("NaN"));
  assert.equal(escapeXml(`"<&>"`), "&quot;&lt;&amp;&gt;&quot;");
});

function sampleResults(): BenchResults {
  const run: ScaleRun = {
    miniClusters: 1000,
    size: 4,
    concurrency: 4,
    childrenMs: summarize([100, 200, 300]),
    readyMs: summarize([1000, 2000, 3000]),
    allChildrenMs: 5000,
    allReadyMs: 9000,
    rawClientMs: 4800,
    operatorToRawRatio: 5000 / 4800,
    requestsPerMiniCluster: { apply: 5, create: 3, get: 1 },
    writesPerMiniClusterByResource: { "apply jobs.batch": 1 },
    readsPerMiniCluster: 1,
    writesPerMiniCluster: 8,
    minimumWritesPerMiniCluster: 8,
    reconcilesPerMiniCluster: 4.5,
    operatorCpuSeconds: 12.3,
    samples: { childrenMs: [100, 200, 300], readyMs: [1000, 2000, 3000] },
  };
  const base = {
    date: "2025-01-01T00:00:00Z",
    machine: { cpus: 2, memoryBytes: 8 * 1024 ** 3, deno: "2.9.6", kubernetes: "v1.33.13" },
    notes: ["a note"],
    runs: [run],
    idle: {
      miniClusters: 1000,
      windowMs: 60_000,
      writesPerMinute: 0,
      reconcilesPerMinute: 0,
      requestsPerMinuteByVerb: {},
      cpuPercent: 0.5,
    },
    resources: [
      {
        miniClusters: 0,
        pods: 0,
        rssBytes: 30 * 1024 ** 2,
        idleCpuPercent: 0,
        startupToSyncedMs: 800,
      },
      {
        miniClusters: 1000,
        pods: 4000,
        rssBytes: 70 * 1024 ** 2,
        idleCpuPercent: 0.5,
        startupToSyncedMs: 2500,
        writesAfterRestart: 0,
      },
    ],
  };
  return { ...base, targets: checkTargets(base) };
}

Deno.test("checkTargets: each target judged from the numbers", () => {
  const t = sampleResults().targets;
  const met = Object.fromEntries(t.map((x) => [x.target, x.met]));
  assert.equal(met["writes per MiniCluster = minimum (N=1000)"], true);
  assert.equal(met["all-children time ≤ 1.1× raw client (N=1000)"], true);
  assert.equal(met["idle writes = 0 (N=1000)"], true);
  assert.equal(met["RSS ≤ 60 MiB at 1,000 MiniClusters"], false);
});

Deno.test("formatReport, plots and JSON of a result", () => {
  const r = sampleResults();
  const text = formatReport(r);
  for (const want of ["all children", "1.042×", "min writes", "RSS MiB", "70", "NO", "a note"]) {
    assert.ok(text.includes(want), `report mentions ${want}:\n${text}`);
  }
  assert.equal(latencyPlot(r).match(/<path /g)?.length, 2);
  assert.equal(memoryPlot(r).match(/<path /g)?.length, 1);
  const back = JSON.parse(toJson(r));
  assert.equal(back.runs[0].operatorToRawRatio, 1);
  assert.equal(back.runs[0].samples.readyMs.length, 3);
});

Deno.test("ChangeWaiter.untilOrStalled: true once done; false once progress stops growing", async () => {
  const w = new ChangeWaiter();
  let n = 0;
  const timer = setInterval(() => {
    if (n < 3) n++;
    w.changed();
  }, 5);
  try {
    assert.equal(await w.untilOrStalled(() => n >= 3, () => n, 200), true);
    assert.equal(await w.untilOrStalled(() => n >= 5, () => n, 50), false);
  } finally {
    clearInterval(timer);
  }
});
