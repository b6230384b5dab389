/**
 * The Flux queue poller on fake time (fluxqueue/poller.ts): when it reads, what each outcome makes
 * of the observation, when it wakes a reconcile, its bounds (reads in flight, the timeout) and
 * what it leaves behind (timers, metrics) when a MiniCluster stops asking.
 */
import assert from "node:assert/strict";
import { FakeClock } from "../../runtime/core/clock.ts";
import { Registry } from "../../runtime/metrics/metrics.ts";
import {
  FluxQueuePoller,
  type ReadAnswer,
} from "../../controllers/minicluster/fluxqueue/poller.ts";
import type { FluxQueueWant } from "../../controllers/minicluster/fluxqueue/lead.ts";
import { FLUX_QUEUE_METRICS } from "../../controllers/minicluster/fluxqueue/metrics.ts";

const INTERVAL = 30_000;

function want(ip = "10.0.0.10", uid = "pod-1", intervalMs = INTERVAL): FluxQueueWant {
  return { port: 8060, intervalMs, lead: { name: "mc-0-x", uid, ip } };
}

function report(pending = 1, running = 1, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    version: 1,
    ok: true,
    ageSeconds: 2.5,
    jobs: { pending, running },
    nodes: { total: 2, free: 0, allocated: 2, down: 0 },
    cores: { total: 8, free: 0, allocated: 8, down: 0 },
    pendingNodes: pending * 2,
    largestPendingJobNodes: pending ? 2 : 0,
    pendingJobsListed: pending,
    ...extra,
  });
}

/** A poller on fake time whose reads answer what `answer` says, counting reads and wakes. */
function setup(answer: (url: string) => ReadAnswer | Error | "hang" = () => ({
  status: 200,
  text: report(),
})) {
  const clock = new FakeClock(1_000_000);
  const registry = new Registry();
  const reads: string[] = [];
  const woken: string[] = [];
  const poller = new FluxQueuePoller({
    clock,
    metrics: registry,
    wake: (key) => woken.push(key),
    read: (url, signal) => {
      reads.push(url);
      const a = answer(url);
      if (a === "hang") {
        return new Promise((_, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason))
        );
      }
      return a instanceof Error ? Promise.reject(a) : Promise.resolve(a);
    },
  });
  return { clock, registry, reads, woken, poller };
}

Deno.test("flux queue poller: reads at once, then every interval; a report wakes the reconcile", async () => {
  const { clock, reads, woken, poller, registry } = setup();
  const first = poller.follow("ns/mc", want());
  assert.equal(first?.reason, "WaitingForReport");
  assert.match(first!.message, /http:\/\/10\.0\.0\.10:8060\/v1\/queue/);
  await clock.advance(0);
  assert.deepEqual(reads, ["http://10.0.0.10:8060/v1/queue"]);
  assert.deepEqual(woken, ["ns/mc"]);
  const now = poller.follow("ns/mc", want());
  assert.equal(now?.reason, "Observed");
  assert.deepEqual(now?.snapshot?.jobs, { pending: 1, running: 1 });
  assert.equal(now?.snapshot?.nodes.allocated, 2);
  const text = registry.render();
  assert.match(text, /minicluster_flux_jobs\{namespace="ns",name="mc",state="pending"\} 1/);
  assert.match(text, /minicluster_flux_nodes\{namespace="ns",name="mc",state="allocated"\} 2/);
  assert.match(text, /minicluster_flux_queue_observed\{namespace="ns",name="mc"\} 1/);
  assert.match(text, /minicluster_flux_queue_reads_total\{result="observed"\} 1/);
  // The same report again: read, but nothing to wake for.
  await clock.advance(INTERVAL - 1);
  assert.equal(reads.length, 1);
  await clock.advance(1);
  assert.equal(reads.length, 2);
  assert.deepEqual(woken, ["ns/mc"]);
  // following again with the same want changes nothing: no extra read
  poller.follow("ns/mc", want());
  await clock.advance(0);
  assert.equal(reads.length, 2);
  poller.stop();
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("flux queue poller: a changed number wakes; the numbers are the status's", async () => {
  let pending = 1;
  const { clock, woken, poller } = setup(() => ({ status: 200, text: report(pending, 1) }));
  poller.follow("ns/mc", want());
  await clock.advance(0);
  pending = 0;
  await clock.advance(INTERVAL);
  assert.deepEqual(woken, ["ns/mc", "ns/mc"]);
  const o = poller.follow("ns/mc", want());
  assert.deepEqual(o?.snapshot?.jobs, { pending: 0, running: 1 });
  assert.equal(o?.snapshot?.pendingNodes, 0);
  poller.stop();
});

Deno.test("flux queue poller: the reporter's start is WaitingForReport, retried every 5 s, then LeadUnreachable with the error", async () => {
  const { clock, reads, woken, poller, registry } = setup(() =>
    new TypeError("error sending request: Connection refused (os error 111)")
  );
  assert.equal(poller.follow("ns/mc", want())?.unread, true, "nothing read yet");
  await clock.advance(0);
  const starting = poller.follow("ns/mc", want());
  assert.deepEqual([starting?.reason, starting?.unread], ["WaitingForReport", undefined]);
  // The first read replaces what the status showed before this process read anything (a
  // report of the process before a restart): one wake; the reads of the start wake no more.
  assert.deepEqual(woken, ["ns/mc"]);
  await clock.advance(5_000);
  assert.equal(reads.length, 2, "retried after 5 s while starting");
  assert.deepEqual(woken, ["ns/mc"], "the start is not news");
  await clock.advance(55_000);
  const o = poller.follow("ns/mc", want());
  assert.equal(o?.reason, "LeadUnreachable");
  assert.equal(
    o?.message,
    "GET http://10.0.0.10:8060/v1/queue: error sending request: Connection refused (os error 111)",
  );
  assert.deepEqual(woken, ["ns/mc", "ns/mc"]);
  assert.match(registry.render(), /minicluster_flux_queue_observed\{namespace="ns",name="mc"\} 0/);
  // After the start, a lead that does not answer is read every interval, not every 5 s.
  const before = reads.length;
  await clock.advance(INTERVAL);
  assert.equal(reads.length, before + 1);
  poller.stop();
});

Deno.test("flux queue poller: one failed read after a report keeps it; two in a row report the failure", async () => {
  let fail = false;
  const { clock, woken, poller, registry } = setup(() =>
    fail ? { status: 503, text: "busy" } : { status: 200, text: report() }
  );
  poller.follow("ns/mc", want());
  await clock.advance(0);
  fail = true;
  await clock.advance(INTERVAL);
  assert.equal(poller.follow("ns/mc", want())?.reason, "Observed", "a blip keeps the report");
  assert.deepEqual(woken, ["ns/mc"]);
  assert.match(
    registry.render(),
    /minicluster_flux_jobs\{namespace="ns",name="mc",state="running"\} 1/,
  );
  await clock.advance(5_000); // confirmed soon, not an interval later
  const o = poller.follow("ns/mc", want());
  assert.equal(o?.reason, "LeadUnreachable");
  assert.equal(
    o?.message,
    "GET http://10.0.0.10:8060/v1/queue: HTTP 503",
    "never the answer's body",
  );
  assert.equal(o?.snapshot, undefined);
  assert.deepEqual(woken, ["ns/mc", "ns/mc"]);
  const text = registry.render();
  assert.doesNotMatch(text, /minicluster_flux_jobs\{/, "no number is kept for a scaler to act on");
  assert.match(text, /minicluster_flux_queue_reads_total\{result="unreachable"\} 2/);
  fail = false;
  await clock.advance(INTERVAL);
  assert.equal(poller.follow("ns/mc", want())?.reason, "Observed");
  poller.stop();
});

Deno.test("flux queue poller: a read that hangs ends at the timeout, and reads in flight are bounded", async () => {
  const { clock, reads, poller } = setup(() => "hang");
  for (let i = 0; i < 100; i++) poller.follow(`ns/mc${i}`, want(`10.0.1.${i}`, `pod-${i}`));
  await clock.advance(0);
  assert.equal(reads.length, 32, "32 reads at once at most");
  assert.equal(poller.inFlight, 32);
  await clock.advance(2_000);
  assert.equal(reads.length, 64, "the next ones start as the first time out");
  await clock.advance(4_000);
  assert.equal(reads.length, 100);
  poller.stop();
  await clock.advance(10_000);
  assert.equal(clock.pendingTimers, 0);
  assert.equal(reads.length, 100, "a stopped poller reads nothing more");
});

Deno.test("flux queue poller: a lead that never answers is LeadUnreachable: no answer within 2 s", async () => {
  const { clock, poller } = setup(() => "hang");
  poller.follow("ns/mc", want());
  // Reads end 2 s after they start and come again 5 s later: past the first minute at 65 s.
  await clock.advance(70_000);
  const o = poller.follow("ns/mc", want());
  assert.equal(o?.reason, "LeadUnreachable");
  assert.equal(o?.message, "GET http://10.0.0.10:8060/v1/queue: no answer within 2 s");
  poller.stop();
});

Deno.test("flux queue poller: answers that are not reports, Flux's errors and an old report", async () => {
  const cases: [string, string, RegExp][] = [
    ["<html>hello</html>", "ReportInvalid", /not a queue report: the answer is not JSON$/],
    [
      JSON.stringify({
        version: 1,
        ok: false,
        error: "job-list.job-stats: Function not implemented",
      }),
      "FluxUnreadable",
      /could not read Flux: job-list\.job-stats: Function not implemented$/,
    ],
    [report(1, 1, { ageSeconds: 500 }), "ReportStale", /no answer from Flux for more than 120 s/],
  ];
  for (const [text, reason, message] of cases) {
    const { clock, poller } = setup(() => ({ status: 200, text }));
    poller.follow("ns/mc", want());
    await clock.advance(61_000);
    const o = poller.follow("ns/mc", want());
    assert.equal(o?.reason, reason, text);
    assert.match(o!.message, message);
    assert.ok(!o!.message.includes("<html>"), "the answer's text is never shown");
    poller.stop();
  }
});

Deno.test("flux queue poller: a reporter whose Flux is still starting stays WaitingForReport", async () => {
  const starting = JSON.stringify({ version: 1, ok: false, starting: true, error: "no answer" });
  const { clock, woken, poller } = setup(() => ({ status: 200, text: starting }));
  poller.follow("ns/mc", want());
  await clock.advance(5 * 60_000);
  const o = poller.follow("ns/mc", want());
  assert.equal(o?.reason, "WaitingForReport");
  assert.match(o!.message, /no answer from Flux yet/);
  assert.deepEqual(woken, ["ns/mc"], "once, when the message said why");
  poller.stop();
});

Deno.test("flux queue poller: a new lead pod starts over; the old one's late answer is dropped", async () => {
  const { clock, reads, poller } = setup((url) =>
    url.includes("10.0.0.10") ? "hang" : { status: 200, text: report(3, 0) }
  );
  poller.follow("ns/mc", want("10.0.0.10", "pod-1"));
  await clock.advance(0);
  const o = poller.follow("ns/mc", want("10.0.0.20", "pod-2"));
  assert.equal(o?.reason, "WaitingForReport");
  await clock.advance(0);
  assert.equal(reads.at(-1), "http://10.0.0.20:8060/v1/queue");
  assert.equal(poller.follow("ns/mc", want("10.0.0.20", "pod-2"))?.snapshot?.jobs.pending, 3);
  await clock.advance(2_000); // the old read times out: no effect
  assert.equal(poller.follow("ns/mc", want("10.0.0.20", "pod-2"))?.reason, "Observed");
  poller.stop();
});

Deno.test("flux queue poller: no lead pod is LeadNotRunning; a MiniCluster that stops asking leaves nothing", async () => {
  const { clock, reads, poller, registry } = setup();
  const none = poller.follow("ns/mc", {
    port: 8060,
    intervalMs: INTERVAL,
    noLead: "the lead broker's pod mc-0-x is Pending",
  });
  assert.equal(none?.reason, "LeadNotRunning");
  assert.equal(none?.message, "the lead broker's pod mc-0-x is Pending: no queue to read");
  await clock.advance(INTERVAL);
  assert.equal(reads.length, 0, "nothing to read");
  poller.follow("ns/mc", want());
  await clock.advance(0);
  assert.equal(reads.length, 1);
  assert.equal(poller.follow("ns/mc", undefined), undefined);
  assert.equal(poller.size, 0);
  assert.equal(clock.pendingTimers, 0);
  assert.doesNotMatch(registry.render(), /name="mc"/);
  // forget, as the reconciler does for a deleted MiniCluster
  poller.follow("ns/other", want());
  await clock.advance(0);
  poller.forget("ns/other");
  assert.equal(clock.pendingTimers, 0);
  assert.doesNotMatch(registry.render(), /name="other"/);
  await clock.advance(INTERVAL);
  assert.equal(reads.length, 2);
});

Deno.test("flux queue poller: the controller's signal stops it; an IPv6 lead is bracketed", async () => {
  const { clock, reads, poller } = setup();
  const controller = new AbortController();
  poller.follow("ns/mc", want("fd00::a"), controller.signal);
  await clock.advance(0);
  assert.deepEqual(reads, ["http://[fd00::a]:8060/v1/queue"]);
  controller.abort();
  assert.equal(clock.pendingTimers, 0);
  await clock.advance(INTERVAL);
  assert.equal(reads.length, 1);
  assert.equal(
    poller.follow("ns/mc", want("fd00::a")),
    undefined,
    "a stopped poller follows nothing",
  );
});

Deno.test("flux queue metrics: the families are registered once and render", () => {
  const registry = new Registry();
  new FluxQueuePoller({ metrics: registry });
  new FluxQueuePoller({ metrics: registry }); // a second one shares the families
  for (const name of Object.values(FLUX_QUEUE_METRICS)) {
    assert.ok(registry.get(name), name);
  }
});
