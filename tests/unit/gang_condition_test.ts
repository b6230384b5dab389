import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { podView } from "../../controllers/minicluster/cache_view.ts";
import { gangCondition } from "../../controllers/minicluster/gang_condition.ts";

const ganged = (minCount: number): Job => ({
  metadata: { name: "flux", uid: "u1" },
  spec: {
    parallelism: 3,
    template: {},
    scheduling: { schedulingPolicy: { gang: { minCount } } },
  } as Job["spec"],
});

const unganged: Job = { metadata: { name: "flux" }, spec: { parallelism: 3, template: {} } };

function pod(i: number, placed: boolean): Pod {
  return {
    metadata: {
      name: `flux-${i}`,
      ownerReferences: [{
        apiVersion: "batch/v1",
        kind: "Job",
        name: "flux",
        uid: "u1",
        controller: true,
      }],
    },
    spec: { containers: [], schedulingGroup: { podGroupName: "flux-pg" } } as Pod["spec"],
    status: {
      phase: "Pending",
      conditions: placed ? [] : [{
        type: "PodScheduled",
        status: "False",
        reason: "Unschedulable",
        message: "0/2 nodes are available",
      }],
    },
  };
}

Deno.test("gangCondition: none without a gang; Unavailable says why and that the pods go one by one", () => {
  assert.equal(gangCondition({ asked: false }, unganged, []), undefined);
  const [ok, reason, message] = gangCondition(
    { asked: true, unavailable: "the API server dropped it" },
    unganged,
    [],
  )!;
  assert.equal(ok, false);
  assert.equal(reason, "Unavailable");
  assert.match(message, /^gang scheduling is unavailable: the API server dropped it; .*one by one/);
});

Deno.test("gangCondition: the PodGroup's refusal is surfaced with its reason and message", () => {
  const pods = [0, 1, 2].map((i) => pod(i, false));
  const condition = {
    type: "PodGroupInitiallyScheduled",
    status: "False",
    reason: "Unschedulable",
    message: "0/2 nodes are available: 2 Insufficient cpu.",
    lastTransitionTime: "2026-11-27T04:00:00Z",
  };
  assert.deepEqual(
    gangCondition({ asked: true, podGroup: { name: "flux-pg", condition } }, ganged(3), pods),
    [false, "Unschedulable", "PodGroup flux-pg: 0/2 nodes are available: 2 Insufficient cpu."],
  );
});

Deno.test("gangCondition: Pending until every pod is placed, then Scheduled; a gang off the Job", () => {
  assert.equal(gangCondition({ asked: true }, ganged(3), [pod(0, true)])![1], "Pending");
  assert.equal(
    gangCondition({ asked: true }, ganged(3), [0, 1, 2].map((i) => pod(i, true)))![1],
    "Scheduled",
  );
  assert.equal(gangCondition({ asked: true }, undefined, [])![1], "JobNotCreated");
  assert.equal(gangCondition({ asked: true }, unganged, [])![1], "JobNotGanged");
  // The spec dropped the gang, the Job keeps it: still reported.
  assert.equal(gangCondition({ asked: false }, ganged(2), [])![1], "Pending");
});

Deno.test("podView: an unplaced pod keeps the name of its PodGroup, a placed one does not", () => {
  const kept = podView(pod(0, false));
  assert.deepEqual(kept.spec, { schedulingGroup: { podGroupName: "flux-pg" } });
  assert.equal(podView(pod(1, true)).spec, undefined);
});

Deno.test("gangCondition: a finished Job says what its gang did, whatever pods are left", () => {
  const finished = (type: string): Job => ({
    ...ganged(3),
    status: { conditions: [{ type, status: "True" }] },
  });
  assert.equal(gangCondition({ asked: true }, finished("SuccessCriteriaMet"), [])![1], "Scheduled");
  assert.equal(gangCondition({ asked: true }, finished("Complete"), [])![0], true);
  assert.deepEqual(gangCondition({ asked: true }, finished("Failed"), []), [
    false,
    "JobFailed",
    "the Job failed",
  ]);
});
