// Flux's queue in the reconcile (issue 39, item 1): the reconcile hands the poller the lead pod to
// read (no IO of its own), writes what the poller knows into the status, paced like other
// progress, with an Event only when the condition changes; a MiniCluster that does not ask, or is
// gone, is not read.
import assert from "node:assert/strict";
import { MiniClusters } from "../../api/resource.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";
import type { FluxQueueSource } from "../../controllers/minicluster/fluxqueue/poller.ts";
import type { FluxQueueWant } from "../../controllers/minicluster/fluxqueue/lead.ts";
import type { FluxQueueObservation } from "../../controllers/minicluster/fluxqueue/observation.ts";

const STATUS = "miniclusters.flux-framework.org/status";

/** A poller stand-in: it knows `now` and records what each reconcile asked it to read. */
class StubSource implements FluxQueueSource {
  now: FluxQueueObservation | undefined;
  wants: [string, FluxQueueWant | undefined][] = [];
  forgotten: string[] = [];
  follow(key: string, want: FluxQueueWant | undefined) {
    this.wants.push([key, want]);
    return want ? this.now : undefined;
  }
  forget(key: string) {
    this.forgotten.push(key);
  }
}

const snapshot = (pending: number, running: number) => ({
  jobs: { pending, running },
  nodes: { total: 2, free: 2 - 2 * running, allocated: 2 * running, down: 0 },
  cores: { total: 8, free: 8 - 8 * running, allocated: 8 * running, down: 0 },
  pendingNodes: 2 * pending,
  largestPendingJobNodes: pending ? 2 : 0,
});

async function running(source: StubSource): Promise<FakeOperator> {
  const op = new FakeOperator({ pacingOff: ["first-status-delay"], fluxQueue: source });
  await op.create("flux", { size: 2, flux: { queueReport: {} } });
  await op.reconcile("flux");
  op.sync();
  op.seedPods("flux", 2, 2);
  await op.converge("flux");
  return op;
}

Deno.test("reconcile flux queue: the lead pod is handed to the poller, what it knows is the status", async () => {
  const source = new StubSource();
  source.now = { reason: "WaitingForReport", message: "waiting for the reporter" };
  const op = await running(source);
  const [key, want] = source.wants.at(-1)!;
  assert.equal(key, `${NS}/flux`);
  assert.deepEqual(want, {
    port: 8060,
    intervalMs: 30_000,
    lead: { name: "flux-0-x", uid: want?.lead?.uid, ip: "10.0.0.10" },
  });
  const waiting = op.condition("flux", "FluxQueueObserved");
  assert.deepEqual([waiting?.status, waiting?.reason], ["False", "WaitingForReport"]);
  assert.equal(op.miniCluster("flux")?.status?.fluxQueue, undefined);
  assert.ok(!op.events("flux").includes("WaitingForReport"), "the start is no Event");

  // The poller read a report and woke the MiniCluster: the status shows it, with one Event.
  source.now = { reason: "Observed", message: "1 pending, 1 running", snapshot: snapshot(1, 1) };
  op.time += 10_000;
  op.requestsSince();
  await op.converge("flux");
  assert.deepEqual(op.writesSince().filter((w) => !w.startsWith("create events")), [
    `apply ${STATUS} flux`,
  ]);
  assert.deepEqual(op.miniCluster("flux")?.status?.fluxQueue, snapshot(1, 1));
  assert.equal(op.condition("flux", "FluxQueueObserved")?.status, "True");
  assert.equal(op.events("flux").filter((r) => r === "Observed").length, 1);

  // The operator restarts (or another takes the lead): until its first read, the status stands.
  source.now = { reason: "WaitingForReport", message: "waiting", unread: true };
  op.time += 1_000;
  op.requestsSince();
  await op.reconcile("flux");
  assert.deepEqual(op.writesSince(), [], "a restart writes no status and no Event");
  assert.deepEqual(op.miniCluster("flux")?.status?.fluxQueue, snapshot(1, 1));

  // New numbers are progress: written, no Event; paced 3 s after the last status write.
  source.now = { reason: "Observed", message: "0 pending, 1 running", snapshot: snapshot(0, 1) };
  op.time += 1_000;
  const paced = await op.reconcile("flux");
  assert.ok(paced.requeueAfter !== undefined && paced.requeueAfter <= 3_000, "paced");
  op.time += paced.requeueAfter!;
  await op.converge("flux");
  assert.deepEqual(op.miniCluster("flux")?.status?.fluxQueue, snapshot(0, 1));
  assert.equal(op.events("flux").filter((r) => r === "Observed").length, 1, "no Event for numbers");

  // The lead broker cannot be read: the condition says why, a Warning Event, no numbers left.
  source.now = {
    reason: "LeadUnreachable",
    message: "GET http://10.0.0.10:8060/v1/queue: no answer within 2 s",
  };
  op.time += 30_000;
  await op.converge("flux");
  const lost = op.condition("flux", "FluxQueueObserved");
  assert.deepEqual([lost?.status, lost?.reason, lost?.message], [
    "False",
    "LeadUnreachable",
    "GET http://10.0.0.10:8060/v1/queue: no answer within 2 s",
  ]);
  assert.equal(op.miniCluster("flux")?.status?.fluxQueue, undefined);
  assert.ok(op.events("flux").includes("LeadUnreachable"));

  // Nothing changed: nothing written.
  op.requestsSince();
  await op.reconcile("flux");
  assert.deepEqual(op.writesSince(), []);
});

Deno.test("reconcile flux queue: a MiniCluster that does not ask is not followed, nor shows the condition", async () => {
  const source = new StubSource();
  source.now = { reason: "Observed", message: "m", snapshot: snapshot(0, 0) };
  const op = new FakeOperator({ pacingOff: ["first-status-delay"], fluxQueue: source });
  await op.create("plain", { size: 2 });
  await op.converge("plain");
  assert.ok(source.wants.length > 0 && source.wants.every(([, want]) => want === undefined));
  assert.equal(op.condition("plain", "FluxQueueObserved"), undefined);
  assert.equal(op.miniCluster("plain")?.status?.fluxQueue, undefined);
});

Deno.test("reconcile flux queue: a MiniCluster deleted, or gone, is forgotten", async () => {
  const source = new StubSource();
  source.now = { reason: "Observed", message: "m", snapshot: snapshot(0, 0) };
  const op = await running(source);
  await op.api.delete(MiniClusters, NS, "flux");
  op.sync();
  await op.reconcile("flux");
  assert.ok(source.forgotten.includes(`${NS}/flux`), "being deleted: forgotten");
  source.forgotten = [];
  const mc = op.miniCluster("flux");
  if (mc) {
    await op.api.patch(MiniClusters, NS, "flux", { metadata: { finalizers: null } }, "merge");
  }
  op.sync();
  await op.reconcile("flux");
  assert.ok(source.forgotten.includes(`${NS}/flux`), "gone: forgotten");
});
