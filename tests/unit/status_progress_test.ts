import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { computeStatus, progressOnly } from "../../controllers/minicluster/status.ts";

const job: Job = { metadata: { uid: "j" }, spec: { parallelism: 4, template: {} } };

function pods(ready: number): Pod[] {
  return Array.from({ length: 4 }, (_, i) => ({
    metadata: {
      name: `p${i}`,
      ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "x", uid: "j" }],
    },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: i < ready ? "True" : "False" }],
    },
  }));
}

function status(ready: number, previous?: ReturnType<typeof computeStatus>) {
  return computeStatus({
    generation: 1,
    selector: "hpa-selector=x",
    requestedSize: 4,
    effectiveSize: 4,
    maximumSize: 4,
    job,
    pods: pods(ready),
    previous: previous?.conditions,
    now: "2026-01-01T00:00:00Z",
  });
}

Deno.test("progressOnly: another ready pod is progress; Ready turning True is not", () => {
  const zero = status(0);
  assert.equal(progressOnly(zero, status(1, zero)), true);
  assert.equal(progressOnly(status(3), status(4, status(3))), false, "Ready turns True");
  assert.equal(progressOnly(undefined, zero), false, "no stored status yet");
  assert.equal(progressOnly({}, zero), false);
  const otherGeneration = { ...status(1, zero), observedGeneration: 2 };
  assert.equal(progressOnly(zero, otherGeneration), false);
});
