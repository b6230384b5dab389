import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import {
  suspendedCondition,
  suspendedOnlyBy,
  suspendOwners,
  ttlRemainingMs,
} from "../../controllers/minicluster/lifecycle/lifecycle.ts";
import { buildServicesPod } from "../../controllers/minicluster/children/services_pod.ts";
import { buildJob } from "../../controllers/minicluster/children/job.ts";
import { withDefaults } from "../../api/mod.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";
import { specSized } from "./fixtures.ts";

const job = (suspend: boolean | undefined, extra: Partial<Job> = {}): Job => ({
  metadata: { labels: { "kueue.x-k8s.io/queue-name": "q1" } },
  spec: { suspend, template: {} },
  ...extra,
});

Deno.test("lifecycle: suspended by the user, held by a queue, resuming, running", () => {
  assert.deepEqual(suspendedCondition(job(true), true).slice(0, 2), [true, "Suspended"]);
  const [held, reason, message] = suspendedCondition(job(true), false);
  assert.deepEqual([held, reason], [true, "WaitingForAdmission"]);
  assert.match(message, /waiting for admission.*queue q1/);
  assert.deepEqual(suspendedCondition(job(false), true).slice(0, 2), [false, "Suspending"]);
  assert.deepEqual(suspendedCondition(job(false), false).slice(0, 2), [false, "NotSuspended"]);
  assert.deepEqual(suspendedCondition(undefined, false).slice(0, 2), [false, "NotSuspended"]);
});

Deno.test("lifecycle: the operator resumes only a suspension it alone set", () => {
  const owning = (manager: string, operation: string, subresource?: string) => ({
    manager,
    operation,
    ...(subresource ? { subresource } : {}),
    fieldsV1: { "f:spec": { "f:suspend": {}, "f:parallelism": {} } },
  });
  const other = { manager: "other", operation: "Update", fieldsV1: { "f:spec": { "f:x": {} } } };
  const suspended = (...managedFields: object[]) =>
    job(true, { metadata: { managedFields } } as Partial<Job>);
  const us = "minicluster-operator";
  const ours = suspended(owning(us, "Apply"), owning(us, "Update"), other);
  assert.deepEqual(suspendOwners(ours), [us, us]);
  assert.equal(suspendedOnlyBy(ours, us), true, "the apply and a patch of ours");
  assert.equal(
    suspendedOnlyBy(suspended(owning(us, "Apply"), owning("kueue", "Update")), us),
    false,
  );
  assert.equal(suspendedOnlyBy(suspended(other), us), false, "set by nobody: a webhook");
  assert.equal(suspendedOnlyBy(suspended(owning("x", "Update", "status")), us), false);
  const running = job(
    false,
    { metadata: { managedFields: [owning(us, "Update")] } } as Partial<Job>,
  );
  assert.equal(suspendedOnlyBy(running, us), false, "not suspended");
});

Deno.test("lifecycle: the TTL counts from the Job's Complete or Failed transition", () => {
  const finished = (type: string): Job =>
    job(false, {
      status: {
        conditions: [{ type, status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" }],
      },
    });
  const now = new Date("2026-01-01T00:00:04Z");
  assert.equal(ttlRemainingMs(10, finished("Complete"), now), 6_000);
  assert.equal(ttlRemainingMs(10, finished("Failed"), now), 6_000);
  assert.equal(ttlRemainingMs(3, finished("Complete"), now), 0);
  assert.equal(ttlRemainingMs(10, finished("SuccessCriteriaMet"), now), undefined, "not yet");
  assert.equal(ttlRemainingMs(undefined, finished("Complete"), now), undefined, "no TTL");
  assert.equal(ttlRemainingMs(10, job(false), now), undefined, "running");
});

Deno.test("lifecycle: suspend only when asked; priority on the Job's pods and the services pod", () => {
  const mc = (spec: Record<string, unknown>) =>
    withDefaults({
      ...sampleMiniCluster("mc", "ns", {
        services: [{ image: "nginx", name: "web" }],
        pod: { priorityClassName: "hpc" },
        ...spec,
      }),
      metadata: { name: "mc", namespace: "ns", uid: "u1" },
    });
  assert.equal(
    buildJob(...specSized(mc({}))).spec?.suspend,
    undefined,
    "unset: the field is not ours",
  );
  assert.equal(
    buildJob(...specSized(mc({ suspend: false }))).spec?.suspend,
    undefined,
    "false: not ours",
  );
  assert.equal(buildJob(...specSized(mc({ suspend: true }))).spec?.suspend, true);
  assert.equal(buildJob(...specSized(mc({}))).spec?.template.spec?.priorityClassName, "hpc");
  assert.equal(buildServicesPod(mc({}))?.spec?.priorityClassName, "hpc");
});
