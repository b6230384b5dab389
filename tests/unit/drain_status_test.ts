/**
 * The drain as the status shows it (status/drain_condition.ts): the Draining condition from the
 * Job's pods that are going, its Events, what the pod cache keeps of a broker whose drain
 * cancelled jobs, that such a pod wakes its MiniCluster at once, and that the deletion of a whole
 * MiniCluster does not wait for its long drain grace period.
 */
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import {
  DRAIN_GRACE_EXPIRED,
  drainCondition,
  NOT_DRAINING,
  RANKS_DRAINING,
  rankSet,
} from "../../controllers/minicluster/status/drain_condition.ts";
import { computeStatus } from "../../controllers/minicluster/status/status.ts";
import { conditionEvents } from "../../controllers/minicluster/status/events.ts";
import { podView } from "../../controllers/minicluster/kinds/cache_view.ts";
import { CHILD_KINDS } from "../../controllers/minicluster/kinds/child_kinds.ts";
import {
  DELETION_GRACE_SECONDS,
  podsToHurry,
} from "../../controllers/minicluster/lifecycle/cleanup.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const job: Job = {
  apiVersion: "batch/v1",
  kind: "Job",
  metadata: { name: "mc", namespace: "ns", uid: "job-1" },
  spec: { parallelism: 2, completions: 2, template: {} },
};

const expired = (rank: number, jobs: string) =>
  `${DRAIN_GRACE_EXPIRED}: rank ${rank} (mc-${rank}): the drain grace period (10s) ran out; ` +
  `cancelled its running jobs: ${jobs}`;

function pod(index: number, opts: { going?: boolean; message?: string; owner?: string } = {}): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `mc-${index}-x`,
      namespace: "ns",
      uid: `p${index}`,
      labels: { "batch.kubernetes.io/job-completion-index": `${index}`, "job-name": "mc" },
      ownerReferences: [{
        apiVersion: "batch/v1",
        kind: "Job",
        name: "mc",
        uid: opts.owner ?? "job-1",
        controller: true,
      }],
      ...(opts.going ? { deletionTimestamp: "2026-11-29T07:20:00Z" } : {}),
    },
    status: {
      phase: "Running",
      containerStatuses: [{
        name: "mc",
        image: "i",
        imageID: "",
        ready: !opts.message,
        restartCount: 0,
        state: opts.message
          ? { terminated: { exitCode: 143, reason: "Error", message: opts.message } }
          : { running: {} },
      }],
    },
  };
}

Deno.test("rank sets read as Flux's idsets", () => {
  assert.equal(rankSet([3, 2]), "2-3");
  assert.equal(rankSet([1, 2, 3, 5, 7, 8]), "1-3,5,7-8");
  assert.equal(rankSet([4]), "4");
  assert.equal(rankSet([]), "");
});

Deno.test("Draining: absent without the drain, False while no broker's pod goes", () => {
  assert.equal(
    drainCondition(undefined, job, [pod(0), pod(1), pod(2, { going: true })]),
    undefined,
  );
  assert.deepEqual(drainCondition(30, job, [pod(0), pod(1)]), [
    false,
    NOT_DRAINING,
    "no broker's pod is going",
  ]);
  // The lead broker never drains; a pod of an earlier Job is not this Job's broker.
  assert.equal(drainCondition(30, job, [pod(0, { going: true })])![1], NOT_DRAINING);
  assert.equal(drainCondition(30, job, [pod(3, { going: true, owner: "old" })])![1], NOT_DRAINING);
});

Deno.test("Draining: not after the Job ended, when its followers' pods go with the instance", () => {
  const ended: Job = {
    ...job,
    status: { conditions: [{ type: "SuccessCriteriaMet", status: "True" }] },
  };
  assert.deepEqual(drainCondition(30, ended, [pod(0), pod(1, { going: true })]), [
    false,
    NOT_DRAINING,
    "the Job has ended",
  ]);
});

Deno.test("Draining: the ranks of the going pods, after a shrink or a pod deleted", () => {
  const shrink = drainCondition(120, job, [
    pod(0),
    pod(1),
    pod(2, { going: true }),
    pod(3, { going: true }),
  ]);
  assert.deepEqual(shrink, [
    true,
    RANKS_DRAINING,
    "draining ranks 2-3 (the size is now 2) in Flux: their pods go when the ranks' jobs have " +
    "ended, or after 120s, when those jobs are cancelled",
  ]);
  const deleted = drainCondition(120, job, [pod(0), pod(1, { going: true })]);
  assert.equal(deleted![1], RANKS_DRAINING);
  assert.match(deleted![2], /^draining rank 1 in Flux/);
});

Deno.test("Draining: a rank whose grace period ran out names the cancelled jobs", () => {
  const c = drainCondition(10, job, [
    pod(0),
    pod(1),
    pod(2, { going: true }),
    pod(3, { going: true, message: expired(3, "fAbc fDef") }),
  ]);
  assert.deepEqual(c, [
    true,
    DRAIN_GRACE_EXPIRED,
    "draining ranks 2-3 (the size is now 2): rank 3 (mc-3): the drain grace period (10s) ran " +
    "out; cancelled its running jobs: fAbc fDef",
  ]);
  // Another termination message (the lead broker's, Flux's) is not a drain's.
  const other = drainCondition(10, job, [pod(3, { going: true, message: "exit 79" })]);
  assert.equal(other![1], RANKS_DRAINING);
});

Deno.test("Draining in the status, and its Events: Normal while draining, Warning for cancelled jobs", () => {
  const status = (pods: Pod[], previous?: Condition[]) =>
    computeStatus({
      selector: "hpa-selector=mc",
      requestedSize: 2,
      effectiveSize: 2,
      maximumSize: 4,
      job,
      pods,
      drain: drainCondition(10, job, pods),
      previous,
      now: "2026-11-29T07:20:00Z",
    }).conditions;
  const steady = status([pod(0), pod(1)]);
  assert.equal(steady.find((c) => c.type === "Draining")?.reason, NOT_DRAINING);
  assert.deepEqual(
    conditionEvents(undefined, steady).filter((e) => e.reason === NOT_DRAINING),
    [],
    "a MiniCluster that drains nothing is no news",
  );
  const draining = status([pod(0), pod(1), pod(3, { going: true })], steady);
  assert.deepEqual(conditionEvents(steady, draining), [{
    type: "Normal",
    reason: RANKS_DRAINING,
    message: "Draining: draining rank 3 (the size is now 2) in Flux: their pods go when the " +
      "ranks' jobs have ended, or after 10s, when those jobs are cancelled",
  }]);
  const cancelled = status(
    [pod(0), pod(1), pod(3, { going: true, message: expired(3, "fAbc") })],
    draining,
  );
  const [warning] = conditionEvents(draining, cancelled);
  assert.equal(warning.type, "Warning");
  assert.equal(warning.reason, DRAIN_GRACE_EXPIRED);
  assert.match(warning.message, /cancelled its running jobs: fAbc$/);
  const done = status([pod(0), pod(1)], cancelled);
  assert.deepEqual(conditionEvents(cancelled, done), [{
    type: "Normal",
    reason: NOT_DRAINING,
    message: "Draining=False: no broker's pod is going",
  }]);
  // Without the drain, the conditions are those they always were.
  const plain = computeStatus({
    selector: "hpa-selector=mc",
    requestedSize: 2,
    effectiveSize: 2,
    maximumSize: 4,
    job,
    pods: [pod(0)],
    now: "2026-11-29T07:20:00Z",
  });
  assert.ok(!plain.conditions.some((c) => c.type === "Draining"));
});

Deno.test("the pod cache keeps the termination message of a drain that cancelled jobs, only it", () => {
  const message = expired(3, "fAbc");
  const view = podView(pod(3, { going: true, message }));
  assert.deepEqual(view.status?.containerStatuses, [
    { name: "mc", state: { terminated: { exitCode: 143, message } } },
  ]);
  assert.equal(
    podView(pod(3, { going: true, message: "exit 79" })).status?.containerStatuses,
    undefined,
  );
  assert.equal(podView(pod(3, { going: true })).status?.containerStatuses, undefined);
});

Deno.test("a pod whose drain cancelled jobs wakes its MiniCluster at once, before it is gone", () => {
  const pods = CHILD_KINDS.find((row) => row.key === "pods")!;
  assert.equal(pods.batched, true);
  assert.equal(pods.atOnce?.(podView(pod(3, { going: true, message: expired(3, "fAbc") }))), true);
  assert.equal(pods.atOnce?.(podView(pod(3, { going: true }))), false);
});

Deno.test("deletion: pods whose drain grace period is longer go within the default 30 s", () => {
  const mc = (grace?: number): MiniCluster => ({
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "mc", namespace: "ns" },
    spec: { containers: [], flux: grace === undefined ? {} : { drainGracePeriodSeconds: grace } },
  });
  const deleted = (seconds: number): Pod => {
    const p = pod(2, { going: true });
    return { ...p, metadata: { ...p.metadata, deletionGracePeriodSeconds: seconds } };
  };
  const pods = [pod(0), deleted(600), deleted(DELETION_GRACE_SECONDS), deleted(5)];
  assert.deepEqual(podsToHurry(mc(600), pods), [pods[0], pods[1]]);
  assert.deepEqual(podsToHurry(mc(30), pods), []);
  assert.deepEqual(podsToHurry(mc(), pods), []);
});

Deno.test("deletion of a draining MiniCluster deletes its Job's pods again, once", async () => {
  const op = new FakeOperator();
  await op.create("slow", { size: 2, flux: { drainGracePeriodSeconds: 600 } });
  await op.converge("slow");
  op.seedPods("slow", 2, 2);
  await op.api.delete(MiniClusters, NS, "slow");
  op.sync();
  op.requestsSince();
  await op.reconcile("slow");
  const writes = op.writesSince();
  assert.ok(writes.includes("delete jobs.batch slow"), writes.join("\n"));
  assert.ok(writes.includes("delete pods slow-0-x"), writes.join("\n"));
  assert.ok(writes.includes("delete pods slow-1-x"), writes.join("\n"));
  // A MiniCluster without the drain leaves its pods to the garbage collector, as before.
  await op.create("plain", { size: 2 });
  await op.converge("plain");
  op.seedPods("plain", 2, 2);
  await op.api.delete(MiniClusters, NS, "plain");
  op.sync();
  op.requestsSince();
  await op.reconcile("plain");
  assert.ok(!op.writesSince().some((w) => w.startsWith("delete pods")));
});
