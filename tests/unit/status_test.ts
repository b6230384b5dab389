import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  LEAD_FAILED_EXIT_CODE,
  LEAD_FAILED_MESSAGE,
} from "../../controllers/minicluster/children/scripts/lead-finished.ts";
import {
  computeStatus,
  type Condition,
  sameStatus,
  type StatusInput,
} from "../../controllers/minicluster/status/status.ts";

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

Deno.test("status: a Job failed on the lead broker's failed run says what that code means", () => {
  const jobMessage =
    `Container mc for pod ns/mc-0-x7k2p failed with exit code ${LEAD_FAILED_EXIT_CODE} matching FailJob rule at index 0`;
  const s = computeStatus(input({
    job: job(2, {
      conditions: [{
        type: "Failed",
        status: "True",
        reason: "PodFailurePolicy",
        message: jobMessage,
      }],
    }),
  }));
  assert.equal(cond(s, "Failed").reason, "PodFailurePolicy");
  assert.equal(cond(s, "Failed").message, `${jobMessage}; ${LEAD_FAILED_MESSAGE}`);
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

/** A pod of the Job that is not running yet, with the given status parts. */
function stuckPod(index: number, status: Pod["status"]): Pod {
  const p = pod(index, "Pending", false);
  return { ...p, status: { ...status, phase: "Pending" } };
}

const UNSCHEDULABLE = {
  type: "PodScheduled",
  status: "False",
  reason: "Unschedulable",
  message: "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.",
};

const waitingFor = (name: string, reason: string, message?: string) => ({
  name,
  image: "i",
  imageID: "",
  ready: false,
  restartCount: 0,
  state: { waiting: { reason, ...(message ? { message } : {}) } },
});

Deno.test("status: pods that cannot be scheduled are named in the Ready message, grouped", () => {
  const s = computeStatus(input({
    job: job(3),
    requestedSize: 3,
    effectiveSize: 3,
    pods: [2, 0, 1].map((i) => stuckPod(i, { conditions: [UNSCHEDULABLE] })),
  }));
  const ready = cond(s, "Ready");
  assert.equal(ready.reason, "PodsNotReady", "the reason stays, so Events do not flap");
  assert.equal(
    ready.message,
    "0/3 pods ready; Unschedulable: 0/4 nodes are available: 4 node(s) didn't match Pod's node " +
      "affinity/selector. (pods mc-0-x, mc-1-x, mc-2-x)",
  );
});

Deno.test("status: containers waiting for a reason are named; routine waits are not", () => {
  const s = computeStatus(input({
    job: job(4),
    requestedSize: 4,
    effectiveSize: 4,
    pods: [
      pod(0, "Running", true),
      stuckPod(1, {
        containerStatuses: [
          waitingFor("flux", "ImagePullBackOff", 'Back-off pulling image "ghcr.io/no/such:tag"'),
        ],
      }),
      stuckPod(2, {
        initContainerStatuses: [waitingFor("flux-view", "PodInitializing")],
        containerStatuses: [waitingFor("flux", "ContainerCreating")],
      }),
      stuckPod(3, {
        containerStatuses: [
          waitingFor("flux", "CreateContainerConfigError", 'secret "creds" not found'),
        ],
      }),
    ],
  }));
  assert.equal(
    cond(s, "Ready").message,
    '1/4 pods ready; ImagePullBackOff (container flux): Back-off pulling image "ghcr.io/no/such:tag" ' +
      '(pod mc-1-x); CreateContainerConfigError (container flux): secret "creds" not found (pod mc-3-x)',
  );
});

Deno.test("status: the Ready message stays short however many pods and problems there are", () => {
  const long = `0/9 nodes are available:\n${"x ".repeat(300)}`;
  const pods = [
    ...[0, 1, 2, 3, 4].map((i) =>
      stuckPod(i, { conditions: [{ ...UNSCHEDULABLE, message: long }] })
    ),
    ...["A", "B", "C", "D"].map((reason, i) =>
      stuckPod(5 + i, { containerStatuses: [waitingFor("flux", `Err${reason}`)] })
    ),
  ];
  const s = computeStatus(input({ job: job(9), requestedSize: 9, effectiveSize: 9, pods }));
  const message = cond(s, "Ready").message!;
  assert.ok(message.startsWith("0/9 pods ready; Unschedulable: 0/9 nodes are available: x x"));
  assert.ok(message.includes("… (pods mc-0-x, mc-1-x, mc-2-x and 2 more)"), message);
  assert.ok(message.includes("; ErrA (container flux) (pod mc-5-x); ErrB"), message);
  assert.ok(message.endsWith("; 2 more problems"), message);
  assert.ok(!message.includes("\n"));
  assert.ok(message.length < 600, `${message.length} characters`);
  // Finished pods and pods being deleted are not what holds the cluster back.
  const gone = computeStatus(input({
    job: job(1),
    requestedSize: 1,
    effectiveSize: 1,
    pods: [stuckPod(0, { conditions: [UNSCHEDULABLE] })].map((p) => ({
      ...p,
      metadata: { ...p.metadata, deletionTimestamp: NOW },
    })),
  }));
  assert.equal(cond(gone, "Ready").message, "0/1 pods ready");
});
