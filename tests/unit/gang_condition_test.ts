import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod, PodSpec } from "kubernetes-types/core/v1.d.ts";
import { conditionEvents } from "../../controllers/minicluster/status/events.ts";
import { gangCondition } from "../../controllers/minicluster/gang/gang_condition.ts";

/** A Job whose pods name the PodGroup `flux` (or none), placed by `schedulerName` when given. */
const job = (
  ganged: boolean,
  conditions: { type: string; status: string }[] = [],
  schedulerName?: string,
): Job => ({
  metadata: { name: "flux", uid: "u1" },
  spec: {
    parallelism: 3,
    template: {
      spec: {
        containers: [],
        ...(schedulerName ? { schedulerName } : {}),
        ...(ganged ? { schedulingGroup: { podGroupName: "flux" } } : {}),
      } as PodSpec,
    },
  },
  status: { conditions },
});

/** Pods of the Job in these phases, as the status's pod view keeps them. */
const pods = (...phases: string[]): Pod[] =>
  phases.map((phase, i) => ({ metadata: { name: `flux-${i}` }, status: { phase } }));

const scheduled = (status: string, reason: string, message: string) => ({
  type: "PodGroupInitiallyScheduled",
  status,
  reason,
  message,
  lastTransitionTime: "2026-11-27T04:00:00Z",
});

Deno.test("gangCondition: none without a gang; Unavailable says why and that the pods go one by one", () => {
  assert.equal(gangCondition({ asked: false }, job(false)), undefined);
  const [ok, reason, message] = gangCondition(
    { asked: true, unavailable: "the API server dropped it" },
    job(false),
  )!;
  assert.equal(ok, false);
  assert.equal(reason, "Unavailable");
  assert.match(message, /^gang scheduling is unavailable: the API server dropped it; .*one by one/);
});

Deno.test("gangCondition: the PodGroup's refusal is surfaced with its reason and message", () => {
  const message = "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining";
  const condition = scheduled("False", "Unschedulable", message);
  assert.deepEqual(
    gangCondition({ asked: true, podGroup: { name: "flux", minCount: 3, condition } }, job(true)),
    [false, "Unschedulable", `PodGroup flux: ${message}`],
  );
});

Deno.test("gangCondition: Pending until the scheduler placed the gang, then Scheduled", () => {
  const podGroup = { name: "flux", minCount: 3 };
  assert.deepEqual(gangCondition({ asked: true, podGroup }, job(true)), [
    false,
    "Pending",
    "PodGroup flux: the scheduler has not placed the gang (minCount 3) yet",
  ]);
  const condition = scheduled("True", "Scheduled", "");
  assert.deepEqual(
    gangCondition({ asked: true, podGroup: { ...podGroup, condition } }, job(true)),
    [
      true,
      "Scheduled",
      "PodGroup flux: the gang (minCount 3) was placed together",
    ],
  );
  assert.equal(gangCondition({ asked: true }, job(true))![1], "PodGroupMissing");
});

Deno.test("gangCondition: pods that run while the PodGroup is unanswered: the gang was not enforced, by whom", () => {
  const podGroup = { name: "flux", minCount: 3 };
  // Another scheduler (spec.pod.schedulerName): named, and Pending in its name until pods run.
  const other = job(true, [], "my-scheduler");
  assert.deepEqual(gangCondition({ asked: true, podGroup }, other, pods("Pending", "Pending")), [
    false,
    "Pending",
    "PodGroup flux: the scheduler my-scheduler (spec.pod.schedulerName) has not placed the gang " +
    "(minCount 3) yet",
  ]);
  assert.deepEqual(
    gangCondition({ asked: true, podGroup }, other, pods("Running", "Running", "Pending")),
    [
      false,
      "NotEnforced",
      "PodGroup flux: 2 of 3 pods run, placed by the scheduler my-scheduler " +
      "(spec.pod.schedulerName), which does not answer on PodGroups: the PodGroup has no " +
      "PodGroupInitiallyScheduled condition, so the gang (minCount 3) was not enforced",
    ],
  );
  // The default scheduler without the gate: the same, said of it.
  const [ok, reason, message] = gangCondition(
    { asked: true, podGroup },
    job(true, [], "default-scheduler"),
    pods("Running", "Running", "Running"),
  )!;
  assert.deepEqual([ok, reason], [false, "NotEnforced"]);
  assert.match(message, /^PodGroup flux: 3 of 3 pods run, placed by the default scheduler without/);
  assert.match(message, /feature gate GenericWorkload/);
  // A scheduler that answered keeps its word, whatever runs.
  const condition = scheduled("True", "Scheduled", "");
  assert.equal(
    gangCondition(
      { asked: true, podGroup: { ...podGroup, condition } },
      other,
      pods("Running"),
    )![1],
    "Scheduled",
  );
  // Pods not placed yet leave it Pending.
  assert.equal(gangCondition({ asked: true, podGroup }, job(true), pods("Pending"))![1], "Pending");
});

Deno.test("gangCondition: no Job yet, a Job without a gang, a gang the spec dropped", () => {
  assert.equal(gangCondition({ asked: true }, undefined)![1], "JobNotCreated");
  assert.equal(gangCondition({ asked: true }, job(false))![1], "JobNotGanged");
  assert.equal(
    gangCondition({ asked: false, podGroup: { name: "flux" } }, job(true))![1],
    "Pending",
  );
});

Deno.test("gangCondition: a finished Job says what its gang did, whatever pods are left", () => {
  const done = (type: string) => job(true, [{ type, status: "True" }]);
  assert.equal(gangCondition({ asked: true }, done("SuccessCriteriaMet"))![1], "Scheduled");
  assert.equal(gangCondition({ asked: true }, done("Complete"))![0], true);
  assert.deepEqual(gangCondition({ asked: true }, done("Failed")), [
    false,
    "JobFailed",
    "the Job failed",
  ]);
});

Deno.test("conditionEvents: a gang the scheduler cannot place, the API cannot give or no scheduler enforced warns at once", () => {
  const gang = (reason: string) => ({
    type: "GangScheduling",
    status: "False",
    reason,
    message: "m",
    lastTransitionTime: "2026-11-27T04:00:00Z",
  });
  for (const reason of ["Unschedulable", "Unavailable", "NotEnforced"]) {
    assert.deepEqual(conditionEvents([], [gang(reason)]).map((e) => [e.type, e.reason]), [[
      "Warning",
      reason,
    ]]);
  }
  assert.deepEqual(conditionEvents([], [gang("Pending")]), [], "a gang not placed yet is quiet");
  assert.deepEqual(conditionEvents([gang("Unschedulable")], [gang("Unschedulable")]), []);
});
