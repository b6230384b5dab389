import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  brokerFinished,
  brokerPod,
  computeStatus,
  type Condition,
  sameStatus,
  type StatusInput,
} from "../../controllers/minicluster/status.ts";

const NOW = "2025-01-01T00:00:00Z";
const LATER = "2025-01-01T00:05:00Z";

function job(parallelism: number, conditions: Job["status"] = {}): Job {
  return {
    metadata: { name: "mc", uid: "job-uid" },
    spec: { parallelism, completions: parallelism, template: {} },
    status: conditions,
  };
}

function pod(
  index: number,
  phase: string,
  ready: boolean,
  extra: Partial<Pod["metadata"]> = {},
): Pod {
  return {
    metadata: {
      name: `mc-${index}-x`,
      labels: { "job-name": "mc", "batch.kubernetes.io/job-completion-index": String(index) },
      ownerReferences: [{
        apiVersion: "batch/v1",
        kind: "Job",
        name: "mc",
        uid: "job-uid",
        controller: true,
      }],
      creationTimestamp: NOW,
      ...extra,
    },
    status: { phase, conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  };
}

function input(over: Partial<StatusInput> = {}): StatusInput {
  return {
    generation: 3,
    selector: "hpa-selector=mc",
    requestedSize: 2,
    effectiveSize: 2,
    maximumSize: 4,
    pods: [],
    now: NOW,
    ...over,
  };
}

const cond = (s: { conditions: Condition[] }, type: string) =>
  s.conditions.find((c) => c.type === type)!;

Deno.test("status: no Job yet → not Ready, observations filled", () => {
  const s = computeStatus(input());
  assert.equal(cond(s, "Ready").status, "False");
  assert.equal(cond(s, "Ready").reason, "JobNotCreated");
  assert.equal(s.size, 0);
  assert.equal(s.selector, "hpa-selector=mc");
  assert.equal(s.maximumSize, 4);
  assert.equal(s.observedGeneration, 3);
  assert.equal(s.jobid, "");
  for (const c of s.conditions) {
    assert.equal(c.observedGeneration, 3);
    assert.equal(c.lastTransitionTime, NOW);
    assert.match(c.reason, /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/);
  }
});

Deno.test("status: Ready when every pod runs and is ready", () => {
  const partial = computeStatus(
    input({ job: job(2), pods: [pod(0, "Running", true), pod(1, "Pending", false)] }),
  );
  assert.equal(cond(partial, "Ready").status, "False");
  assert.equal(cond(partial, "Ready").message, "1/2 pods ready");
  assert.equal(partial.readyPods, 1);

  const ready = computeStatus(
    input({ job: job(2), pods: [pod(0, "Running", true), pod(1, "Running", true)] }),
  );
  assert.equal(cond(ready, "Ready").status, "True");
  assert.equal(ready.readyPods, 2);
  assert.equal(ready.size, 2);
  assert.equal(ready.jobid, "job-uid");
});

Deno.test("status: pods being deleted or of another Job do not count", () => {
  const s = computeStatus(input({
    job: job(2),
    pods: [
      pod(0, "Running", true),
      pod(1, "Running", true, { deletionTimestamp: NOW }),
      pod(1, "Running", true, {
        ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "mc", uid: "old-job" }],
      }),
    ],
  }));
  assert.equal(s.readyPods, 1);
  assert.equal(cond(s, "Ready").status, "False");
});

Deno.test("status: Succeeded and Failed follow the Job", () => {
  const done = computeStatus(input({
    job: job(2, { conditions: [{ type: "Complete", status: "True", message: "" }] }),
  }));
  assert.equal(cond(done, "Succeeded").status, "True");
  assert.equal(cond(done, "Failed").status, "False");
  assert.equal(cond(done, "Ready").reason, "JobComplete");

  const failed = computeStatus(input({
    job: job(2, {
      conditions: [{
        type: "Failed",
        status: "True",
        reason: "BackoffLimitExceeded",
        message: "too many",
      }],
    }),
  }));
  assert.equal(cond(failed, "Failed").status, "True");
  assert.equal(cond(failed, "Failed").reason, "BackoffLimitExceeded");
  assert.equal(cond(failed, "Failed").message, "too many");
});

Deno.test("status: invalid and unappliable specs are conditions with reason and message", () => {
  const s = computeStatus(input({
    invalid: { reason: "ValidationFailed", message: "spec.containers: two run Flux" },
    unappliable: {
      reason: "JobFieldsImmutable",
      message: "spec.template.spec.containers[name=c].image",
    },
  }));
  assert.equal(cond(s, "SpecInvalid").status, "True");
  assert.equal(cond(s, "SpecInvalid").reason, "ValidationFailed");
  assert.equal(cond(s, "Ready").reason, "SpecInvalid");
  assert.equal(cond(s, "Unappliable").status, "True");
  assert.match(cond(s, "Unappliable").message, /containers\[name=c\]\.image/);
});

Deno.test("status: a size above the maximum is clamped with a condition", () => {
  const s = computeStatus(input({ requestedSize: 9, effectiveSize: 4, job: job(4) }));
  assert.equal(cond(s, "SizeClamped").status, "True");
  assert.equal(cond(s, "SizeClamped").reason, "AboveMaximum");
  assert.equal(s.size, 4);
  assert.equal(cond(computeStatus(input()), "SizeClamped").status, "False");
});

Deno.test("status: lastTransitionTime is kept while status holds, so equal inputs give equal status", () => {
  const first = computeStatus(input({ job: job(2), pods: [pod(0, "Running", true)] }));
  const again = computeStatus(input({
    job: job(2),
    pods: [pod(0, "Running", true)],
    previous: first.conditions,
    now: LATER,
  }));
  assert.ok(sameStatus(first, again));

  const flipped = computeStatus(input({
    job: job(2),
    pods: [pod(0, "Running", true), pod(1, "Running", true)],
    previous: first.conditions,
    now: LATER,
  }));
  assert.equal(cond(flipped, "Ready").lastTransitionTime, LATER);
  assert.equal(cond(flipped, "Failed").lastTransitionTime, NOW);
  assert.ok(!sameStatus(first, flipped));
});

Deno.test("status: the broker pod is index 0 of this Job, found by the Job's labels", () => {
  const other = pod(0, "Succeeded", false);
  other.metadata!.labels!["job-name"] = "someone-else";
  assert.equal(brokerPod([other, pod(1, "Succeeded", false)], "mc"), undefined);
  assert.ok(!brokerFinished([other], "mc"));
  assert.ok(!brokerFinished([pod(0, "Running", true)], "mc"));
  assert.ok(brokerFinished([pod(0, "Succeeded", false)], "mc"));
  assert.ok(brokerFinished([pod(0, "Failed", false)], "mc"));
});
