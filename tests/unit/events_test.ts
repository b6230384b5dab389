import assert from "node:assert/strict";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import { conditionEvents } from "../../controllers/minicluster/status/events.ts";
import { errorMessage } from "../../runtime/client/errors.ts";
import { ApiError } from "../../runtime/client/errors.ts";

const c = (type: string, status: string, reason: string, message = ""): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: "2025-01-01T00:00:00Z",
});

Deno.test("events: first appearance emits only True conditions", () => {
  const events = conditionEvents(undefined, [
    c("Ready", "False", "PodsNotReady", "0/2 pods ready"),
    c("Failed", "False", "NotFailed"),
    c("SpecInvalid", "True", "ValidationFailed", "bad"),
  ]);
  assert.deepEqual(events, [{
    type: "Warning",
    reason: "ValidationFailed",
    message: "SpecInvalid: bad",
  }]);
});

Deno.test("events: nothing when status and reason are unchanged, even if the message changed", () => {
  const before = [c("Ready", "False", "PodsNotReady", "1/2 pods ready")];
  const after = [c("Ready", "False", "PodsNotReady", "2/3 pods ready")];
  assert.deepEqual(conditionEvents(before, after), []);
});

Deno.test("events: status changes are Normal or Warning by polarity", () => {
  const before = [
    c("Ready", "False", "PodsNotReady"),
    c("Failed", "False", "NotFailed"),
    c("SizeClamped", "False", "WithinBounds"),
  ];
  const after = [
    c("Ready", "True", "PodsReady", "2/2 pods ready"),
    c("Failed", "False", "NotFailed"),
    c("SizeClamped", "True", "AboveMaximum", "requested 9"),
  ];
  assert.deepEqual(conditionEvents(before, after), [
    { type: "Normal", reason: "PodsReady", message: "Ready: 2/2 pods ready" },
    { type: "Warning", reason: "AboveMaximum", message: "SizeClamped: requested 9" },
  ]);
  const lost = conditionEvents([c("Ready", "True", "PodsReady")], [
    c("Ready", "False", "PodsNotReady", "1/2"),
  ]);
  assert.deepEqual(lost, [{
    type: "Warning",
    reason: "PodsNotReady",
    message: "Ready=False: 1/2",
  }]);
  const cleared = conditionEvents([c("SizeClamped", "True", "AboveMaximum")], [
    c("SizeClamped", "False", "WithinBounds", "ok"),
  ]);
  assert.deepEqual(cleared, [{
    type: "Normal",
    reason: "WithinBounds",
    message: "SizeClamped=False: ok",
  }]);
});

Deno.test("events: a reason change alone emits", () => {
  const events = conditionEvents([c("Unappliable", "True", "ApiError", "x")], [
    c("Unappliable", "True", "JobFieldsImmutable", "y"),
  ]);
  assert.equal(events.length, 1);
  assert.equal(events[0].reason, "JobFieldsImmutable");
});

Deno.test("events: API errors carry the Status message", () => {
  const e = new ApiError({
    kind: "Status",
    code: 422,
    reason: "Invalid",
    message: 'Job.batch "x" is invalid: spec.template: field is immutable',
  });
  assert.equal(
    errorMessage(e),
    '422 Invalid: Job.batch "x" is invalid: spec.template: field is immutable',
  );
  assert.equal(errorMessage(new Error("boom")), "boom");
});
