/**
 * The reporter's answer as the operator reads it (fluxqueue/report.ts), the condition and status
 * field an observation makes (fluxqueue/observation.ts, status.ts), their Events (events.ts), and
 * which pod a MiniCluster's queue is read from (fluxqueue/lead.ts).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { MAX_REPORT_BYTES, parseReport } from "../../controllers/minicluster/fluxqueue/report.ts";
import {
  FLUX_QUEUE_OBSERVED,
  type FluxQueueObservation,
  sameObservation,
} from "../../controllers/minicluster/fluxqueue/observation.ts";
import { fluxQueueWant } from "../../controllers/minicluster/fluxqueue/lead.ts";
import { computeStatus, progressOnly } from "../../controllers/minicluster/status/status.ts";
import { conditionEvents } from "../../controllers/minicluster/status/events.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";
import { Pods } from "../../runtime/client/resources.ts";

const GOOD = {
  version: 1,
  ok: true,
  ageSeconds: 1.2,
  jobs: { pending: 1, running: 1 },
  nodes: { total: 2, free: 0, allocated: 2, down: 0 },
  cores: { total: 8, free: 0, allocated: 8, down: 0 },
  pendingNodes: 2,
  largestPendingJobNodes: 2,
  pendingJobsListed: 1,
};

Deno.test("queue report: a good report parses to what the status shows", () => {
  const parsed = parseReport(JSON.stringify(GOOD));
  assert.deepEqual(parsed, {
    kind: "report",
    ageSeconds: 1.2,
    snapshot: {
      jobs: { pending: 1, running: 1 },
      nodes: { total: 2, free: 0, allocated: 2, down: 0 },
      cores: { total: 8, free: 0, allocated: 8, down: 0 },
      pendingNodes: 2,
      largestPendingJobNodes: 2,
    },
  });
});

Deno.test("queue report: malformed and absurd answers are invalid, in the operator's words", () => {
  const cases: [unknown, RegExp][] = [
    ["not json", /not JSON/],
    [[1, 2], /not a JSON object/],
    [null, /not a JSON object/],
    [{ ...GOOD, version: 2 }, /not a version 1 queue report/],
    [{ ...GOOD, ok: "yes" }, /no ok field/],
    [{ ...GOOD, jobs: { pending: -1, running: 1 } }, /jobs\.pending is not a whole number/],
    [{ ...GOOD, jobs: { pending: 1.5, running: 1 } }, /jobs\.pending is not a whole number/],
    [{ ...GOOD, jobs: { pending: "1", running: 1 } }, /jobs\.pending is not a whole number/],
    [{ ...GOOD, jobs: { pending: 2 ** 31, running: 1 } }, /from 0 to 2147483647/],
    [{ ...GOOD, nodes: { total: 2, free: 3, allocated: 0, down: 0 } }, /nodes\.free 3 is above/],
    [{ ...GOOD, cores: { total: 8, free: 0, allocated: 9, down: 0 } }, /cores\.allocated 9/],
    [{ ...GOOD, nodes: "two" }, /nodes\.total is not a whole number/],
    [{ ...GOOD, largestPendingJobNodes: 3 }, /largestPendingJobNodes is above pendingNodes/],
    [{ ...GOOD, jobs: { pending: 0, running: 1 } }, /pendingNodes is above 0 with no pending/],
    [{ ...GOOD, ageSeconds: -1 }, /ageSeconds/],
    [{ ...GOOD, ageSeconds: undefined }, /ageSeconds/],
  ];
  for (const [doc, why] of cases) {
    const text = typeof doc === "string" ? doc : JSON.stringify(doc);
    const parsed = parseReport(text);
    assert.equal(parsed.kind, "invalid", text);
    if (parsed.kind === "invalid") assert.match(parsed.why, why, text);
  }
  const long = parseReport(" ".repeat(MAX_REPORT_BYTES + 1));
  assert.equal(long.kind, "invalid");
});

Deno.test("queue report: Flux's error is kept, bounded; a starting instance says so", () => {
  assert.deepEqual(parseReport(JSON.stringify({ version: 1, ok: false, error: "EPERM" })), {
    kind: "fluxError",
    error: "EPERM",
    starting: false,
  });
  const starting = parseReport(
    JSON.stringify({ version: 1, ok: false, starting: true, error: "x".repeat(2000) }),
  );
  assert.equal(starting.kind, "fluxError");
  if (starting.kind === "fluxError") {
    assert.equal(starting.starting, true);
    assert.equal(starting.error.length, 500);
  }
  const empty = parseReport(JSON.stringify({ version: 1, ok: false }));
  assert.deepEqual(empty, { kind: "fluxError", error: "no error text", starting: false });
});

Deno.test("queue report: any text or JSON value parses without throwing", () => {
  fc.assert(fc.property(fc.string(), (text) => {
    const parsed = parseReport(text);
    assert.ok(["report", "fluxError", "invalid"].includes(parsed.kind));
  }));
  fc.assert(fc.property(fc.jsonValue(), (value) => {
    const doc = typeof value === "object" && value !== null && !Array.isArray(value)
      ? { ...GOOD, ...value }
      : value;
    const parsed = parseReport(JSON.stringify(doc) ?? "");
    if (parsed.kind !== "report") return;
    const { snapshot: s } = parsed;
    for (const n of [s.jobs.pending, s.jobs.running, s.pendingNodes, s.nodes.total]) {
      assert.ok(Number.isInteger(n) && n >= 0 && n < 2 ** 31);
    }
    assert.ok(s.nodes.free <= s.nodes.total && s.cores.allocated <= s.cores.total);
  }));
});

const observed: FluxQueueObservation = {
  reason: "Observed",
  message: "jobs: 1 pending, 1 running",
  snapshot: {
    jobs: { pending: 1, running: 1 },
    nodes: { total: 2, free: 0, allocated: 2, down: 0 },
    cores: { total: 8, free: 0, allocated: 8, down: 0 },
    pendingNodes: 2,
    largestPendingJobNodes: 2,
  },
};

function statusWith(fluxQueue?: FluxQueueObservation, previous?: ReturnType<typeof computeStatus>) {
  return computeStatus({
    generation: 1,
    selector: "hpa-selector=x",
    requestedSize: 2,
    effectiveSize: 2,
    maximumSize: 2,
    pods: [],
    fluxQueue,
    previous: previous?.conditions,
    now: "2026-01-01T00:00:00Z",
  });
}

Deno.test("flux queue status: the condition and status.fluxQueue, only while observed", () => {
  assert.equal(statusWith().conditions.find((c) => c.type === FLUX_QUEUE_OBSERVED), undefined);
  assert.equal(statusWith().fluxQueue, undefined);
  const s = statusWith(observed);
  const c = s.conditions.find((c) => c.type === FLUX_QUEUE_OBSERVED)!;
  assert.deepEqual([c.status, c.reason, c.message], ["True", "Observed", observed.message]);
  assert.deepEqual(s.fluxQueue, observed.snapshot);
  const down = statusWith({ reason: "LeadUnreachable", message: "GET x: HTTP 503" }, s);
  const d = down.conditions.find((c) => c.type === FLUX_QUEUE_OBSERVED)!;
  assert.deepEqual([d.status, d.reason, d.message], [
    "False",
    "LeadUnreachable",
    "GET x: HTTP 503",
  ]);
  assert.equal(down.fluxQueue, undefined, "no stale numbers beside a False condition");
});

Deno.test("flux queue status: before this process's first read, the stored condition and numbers stand", () => {
  const stored = statusWith(observed);
  const unread: FluxQueueObservation = { reason: "WaitingForReport", message: "w", unread: true };
  const restarted = computeStatus({
    generation: 1,
    selector: "hpa-selector=x",
    requestedSize: 2,
    effectiveSize: 2,
    maximumSize: 2,
    pods: [],
    fluxQueue: unread,
    previous: stored.conditions,
    previousFluxQueue: stored.fluxQueue,
    now: "2026-01-02T00:00:00Z",
  });
  assert.deepEqual(restarted, stored, "an operator restart writes nothing");
  // With nothing stored (a new lead pod of a new MiniCluster): waiting, as it is.
  const fresh = statusWith(unread);
  const c = fresh.conditions.find((c) => c.type === FLUX_QUEUE_OBSERVED)!;
  assert.deepEqual([c.status, c.reason], ["False", "WaitingForReport"]);
  // A stored False condition stands too, without numbers.
  const lost = statusWith({ reason: "LeadUnreachable", message: "m" });
  const kept = computeStatus({
    generation: 1,
    selector: "hpa-selector=x",
    requestedSize: 2,
    effectiveSize: 2,
    maximumSize: 2,
    pods: [],
    fluxQueue: unread,
    previous: lost.conditions,
    previousFluxQueue: observed.snapshot,
    now: "2026-01-02T00:00:00Z",
  });
  assert.equal(
    kept.conditions.find((c) => c.type === FLUX_QUEUE_OBSERVED)?.reason,
    "LeadUnreachable",
  );
  assert.equal(kept.fluxQueue, undefined);
});

Deno.test("flux queue status: new numbers are progress (paced); a new reason is a transition", () => {
  const before = statusWith(observed);
  const more = statusWith({
    ...observed,
    message: "jobs: 0 pending, 2 running",
    snapshot: { ...observed.snapshot!, jobs: { pending: 0, running: 2 }, pendingNodes: 0 },
  }, before);
  assert.equal(progressOnly(before, more), true);
  const lost = statusWith({ reason: "LeadUnreachable", message: "m" }, before);
  assert.equal(progressOnly(before, lost), false);
});

Deno.test("flux queue events: one per change of status or reason; Warnings for problems only", () => {
  const at = (o: FluxQueueObservation, prev?: ReturnType<typeof computeStatus>) =>
    statusWith(o, prev);
  const only = (
    prev: ReturnType<typeof computeStatus> | undefined,
    next: ReturnType<typeof computeStatus>,
  ) =>
    conditionEvents(prev?.conditions, next.conditions).filter((e) =>
      e.message.startsWith(FLUX_QUEUE_OBSERVED)
    ).map((e) => `${e.type} ${e.reason}`);
  const waiting = at({ reason: "WaitingForReport", message: "waiting" });
  assert.deepEqual(only(undefined, waiting), [], "the start is not news");
  const seen = at(observed, waiting);
  assert.deepEqual(only(waiting, seen), ["Normal Observed"]);
  const numbers = at({ ...observed, snapshot: { ...observed.snapshot!, pendingNodes: 4 } }, seen);
  assert.deepEqual(only(seen, numbers), [], "numbers alone make no Event");
  const lost = at({ reason: "LeadUnreachable", message: "GET x: refused" }, seen);
  assert.deepEqual(only(seen, lost), ["Warning LeadUnreachable"]);
  const again = at({ reason: "LeadUnreachable", message: "GET x: no answer within 2 s" }, lost);
  assert.deepEqual(only(lost, again), [], "another error text of the same reason: no Event");
  const ended = at({ reason: "LeadNotRunning", message: "the lead pod is Succeeded" }, again);
  assert.deepEqual(only(again, ended), ["Normal LeadNotRunning"]);
  for (const reason of ["ReportInvalid", "FluxUnreadable", "ReportStale"] as const) {
    assert.deepEqual(only(seen, at({ reason, message: "m" }, seen)), [`Warning ${reason}`]);
  }
});

Deno.test("flux queue observation: equal when the status would show the same", () => {
  assert.ok(sameObservation(observed, { ...observed }));
  assert.ok(!sameObservation(observed, { ...observed, message: "other" }));
  assert.ok(!sameObservation(observed, undefined));
  assert.ok(sameObservation(undefined, undefined));
});

Deno.test("flux queue lead: the running index-0 pod of the MiniCluster's own Job, nothing else", async () => {
  const op = new FakeOperator();
  await op.create("mc", { size: 2 });
  await op.converge("mc");
  const mc = () => ({
    ...op.miniCluster("mc")!,
    spec: { ...op.miniCluster("mc")!.spec, flux: { queueReport: {} } },
  });
  const caches = op.caches as unknown as Parameters<typeof fluxQueueWant>[1];
  assert.equal(fluxQueueWant(op.miniCluster("mc")!, caches), undefined, "not asked: nothing");
  assert.deepEqual(fluxQueueWant(mc(), caches), {
    port: 8060,
    intervalMs: 30_000,
    noLead: "the lead broker's pod (index 0) does not exist",
  });
  op.seedPods("mc", 2, 2);
  const lead = fluxQueueWant(mc(), caches)?.lead;
  assert.deepEqual([lead?.name, lead?.ip], ["mc-0-x", "10.0.0.10"]);
  assert.ok(lead?.uid, "the pod's uid: a new pod is read afresh");
  // A pod of index 0 someone else made, with the labels but not controlled by the Job: ignored.
  const forged: Pod = {
    metadata: {
      name: "forged",
      namespace: NS,
      uid: "forged",
      labels: {
        "job-name": "mc",
        "flux-framework.org/minicluster": "mc",
        "app.kubernetes.io/managed-by": "minicluster-operator",
        "batch.kubernetes.io/job-completion-index": "0",
      },
      ownerReferences: [{
        apiVersion: "batch/v1",
        kind: "Job",
        name: "mc",
        uid: "not-the-job",
        controller: true,
      }],
    },
    status: { phase: "Running", podIP: "192.0.2.1" },
  };
  op.api.seed(Pods, forged);
  await op.api.delete(Pods, NS, "mc-0-x");
  op.sync();
  const want = fluxQueueWant(mc(), caches);
  assert.equal(want?.lead, undefined, "the forged pod is never read");
  assert.match(want?.noLead ?? "", /index 0\) does not exist/);
  // Custom port and interval; a MiniCluster being deleted wants nothing.
  const custom = {
    ...mc(),
    spec: { ...mc().spec, flux: { queueReport: { port: 9000, intervalSeconds: 60 } } },
  };
  assert.deepEqual(
    [fluxQueueWant(custom, caches)?.port, fluxQueueWant(custom, caches)?.intervalMs],
    [9000, 60_000],
  );
  const deleting = {
    ...custom,
    metadata: { ...custom.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
  };
  assert.equal(fluxQueueWant(deleting, caches), undefined);
});
