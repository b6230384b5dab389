import assert from "node:assert/strict";
import {
  CONTENT_TYPE,
  escapeLabelValue,
  exponentialBuckets,
  formatValue,
  registerProcessMetrics,
  Registry,
} from "../../runtime/metrics/metrics.ts";
import { startHealthServer } from "../../runtime/http.ts";

Deno.test("metrics: counters and gauges render in the 0.0.4 text format", () => {
  const r = new Registry();
  const requests = r.counter({
    name: "api_requests_total",
    help: "API requests by verb, resource and code.",
    labelNames: ["verb", "resource", "code"],
  });
  const depth = r.gauge({ name: "workqueue_depth", help: "Keys waiting.", labelNames: ["name"] });
  const leader = r.gauge({ name: "leader", help: "1 when this process leads." });
  requests.inc({ verb: "list", resource: "jobs.batch", code: 200 });
  requests.inc({ verb: "get", resource: "configmaps", code: 404 }, 2);
  requests.inc({ verb: "list", resource: "jobs.batch", code: 200 });
  depth.set({ name: "minicluster" }, 3);
  depth.dec({ name: "minicluster" });
  leader.set(1);
  assert.equal(
    r.render(),
    `# HELP api_requests_total API requests by verb, resource and code.
# TYPE api_requests_total counter
api_requests_total{verb="get",resource="configmaps",code="404"} 2
api_requests_total{verb="list",resource="jobs.batch",code="200"} 2
# HELP workqueue_depth Keys waiting.
# TYPE workqueue_depth gauge
workqueue_depth{name="minicluster"} 2
# HELP leader 1 when this process leads.
# TYPE leader gauge
leader 1
`,
  );
  assert.equal(requests.get({ verb: "list", resource: "jobs.batch", code: 200 }), 2);
  assert.equal(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
});

Deno.test("metrics: histograms render cumulative buckets, +Inf, sum and count", () => {
  const r = new Registry();
  const h = r.histogram({
    name: "reconcile_duration_seconds",
    help: "Reconcile latency.",
    labelNames: ["controller"],
    buckets: [0.1, 1],
  });
  h.observe({ controller: "mc" }, 0.05);
  h.observe({ controller: "mc" }, 0.1); // bounds are inclusive
  h.observe({ controller: "mc" }, 0.5);
  h.observe({ controller: "mc" }, 7);
  const plain = r.histogram({ name: "plain_seconds", help: "No labels.", buckets: [1] });
  plain.observe(0.25);
  assert.equal(
    r.render(),
    `# HELP reconcile_duration_seconds Reconcile latency.
# TYPE reconcile_duration_seconds histogram
reconcile_duration_seconds_bucket{controller="mc",le="0.1"} 2
reconcile_duration_seconds_bucket{controller="mc",le="1"} 3
reconcile_duration_seconds_bucket{controller="mc",le="+Inf"} 4
reconcile_duration_seconds_sum{controller="mc"} 7.65
reconcile_duration_seconds_count{controller="mc"} 4
# HELP plain_seconds No labels.
# TYPE plain_seconds histogram
plain_seconds_bucket{le="1"} 1
plain_seconds_bucket{le="+Inf"} 1
plain_seconds_sum 0.25
plain_seconds_count 1
`,
  );
  assert.equal(h.count({ controller: "mc" }), 4);
});

Deno.test("metrics: help and label values are escaped", () => {
  const r = new Registry();
  const c = r.counter({
    name: "odd_total",
    help: 'Back\\slash and\nnewline "kept"',
    labelNames: ["v"],
  });
  c.inc({ v: 'a"b\\c\nd' });
  assert.equal(
    r.render(),
    `# HELP odd_total Back\\\\slash and\\nnewline "kept"
# TYPE odd_total counter
odd_total{v="a\\"b\\\\c\\nd"} 1
`,
  );
  assert.equal(escapeLabelValue("plain"), "plain");
  assert.deepEqual([Infinity, -Infinity, NaN, 1e-7, 42].map(formatValue), [
    "+Inf",
    "-Inf",
    "NaN",
    "1e-7",
    "42",
  ]);
});

Deno.test("metrics: validation of names, labels and counter direction", () => {
  const r = new Registry();
  assert.throws(() => r.counter({ name: "bad-name", help: "" }), /invalid metric name/);
  assert.throws(() => r.gauge({ name: "g", help: "", labelNames: ["__x"] }), /invalid label/);
  assert.throws(() => r.histogram({ name: "h", help: "", labelNames: ["le"] }), /reserved/);
  assert.throws(() => r.histogram({ name: "h2", help: "", buckets: [1, 1] }), /ascend/);
  const c = r.counter({ name: "c_total", help: "", labelNames: ["a"] });
  assert.throws(() => c.inc({ b: "x" }), /unknown label/);
  assert.throws(() => c.inc({ a: "x" }, -1), /only go up/);
  // The same definition is shared; a conflicting one is refused.
  assert.equal(r.counter({ name: "c_total", help: "", labelNames: ["a"] }), c);
  assert.throws(() => r.gauge({ name: "c_total", help: "" }), /already registered/);
  assert.deepEqual(exponentialBuckets(0.001, 2, 4), [0.001, 0.002, 0.004, 0.008]);
});

Deno.test("metrics: collectors refresh gauges at render time; remove forgets a series", () => {
  const r = new Registry();
  let live = 5;
  const g = r.gauge({ name: "live_items", help: "Items.", labelNames: ["kind"] });
  r.onCollect(() => g.set({ kind: "pod" }, live));
  assert.match(r.render(), /live_items\{kind="pod"\} 5\n/);
  live = 6;
  assert.match(r.render(), /live_items\{kind="pod"\} 6\n/);
  g.remove({ kind: "pod" });
  r.onCollect(() => {}); // collectors run in order; the first re-adds the series
  assert.match(r.render(), /live_items\{kind="pod"\} 6\n/);
  assert.equal(new Registry().render(), "");
});

Deno.test("metrics: process metrics report RSS and start time", () => {
  const r = new Registry();
  registerProcessMetrics(r);
  const text = r.render();
  const rss = Number(/process_resident_memory_bytes (\d+)/.exec(text)?.[1]);
  assert.ok(rss > 1_000_000, text);
  const start = Number(/process_start_time_seconds (\d+)/.exec(text)?.[1]);
  assert.ok(Math.abs(start - Date.now() / 1000) < 3600, text);
});

Deno.test("health server: /healthz, /readyz and /metrics", async () => {
  const r = new Registry();
  r.counter({ name: "hits_total", help: "Hits." }).inc();
  let ready = false;
  const srv = startHealthServer({
    port: 0,
    hostname: "127.0.0.1",
    isReady: () => ready,
    metrics: r,
  });
  const get = async (path: string, method = "GET") => {
    const res = await fetch(`http://127.0.0.1:${srv.port}${path}`, { method });
    return { status: res.status, type: res.headers.get("Content-Type"), body: await res.text() };
  };
  try {
    assert.equal((await get("/healthz")).status, 200);
    assert.equal((await get("/readyz")).status, 503);
    ready = true;
    assert.deepEqual(await get("/readyz"), {
      status: 200,
      type: "text/plain; charset=utf-8",
      body: "ok\n",
    });
    const metrics = await get("/metrics");
    assert.equal(metrics.type, CONTENT_TYPE);
    assert.match(metrics.body, /^hits_total 1$/m);
    assert.equal((await get("/nope")).status, 404);
    assert.equal((await get("/healthz", "POST")).status, 405);
  } finally {
    await srv.shutdown();
  }
  const sick = startHealthServer({
    port: 0,
    hostname: "127.0.0.1",
    isReady: () => true,
    isLive: () => false,
  });
  try {
    const res = await fetch(`http://127.0.0.1:${sick.port}/healthz`);
    assert.equal(res.status, 500);
    await res.body?.cancel();
    const m = await fetch(`http://127.0.0.1:${sick.port}/metrics`);
    assert.equal(m.status, 404, "no registry, no metrics");
    await m.body?.cancel();
  } finally {
    await sick.shutdown();
  }
});
