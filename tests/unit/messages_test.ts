// Condition messages stay bounded (issue 18, defect 11): 32 KiB of problems once replaced the
// whole status with the status-write error.
import assert from "node:assert/strict";
import {
  boundedMessage,
  joinedMessages,
  MAX_CONDITION_MESSAGE,
} from "../../controllers/minicluster/status/messages.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { FakeOperator } from "../../testing/fake_operator.ts";

Deno.test("messages: short ones unchanged, long ones cut with a count", () => {
  assert.equal(boundedMessage("short"), "short");
  const long = "x".repeat(10_000);
  const cut = boundedMessage(long, 100);
  assert.ok(cut.length <= 100, `${cut.length}`);
  assert.match(cut, /… \(9940 more characters left out\)$/);
});

Deno.test("messages: whole problems while they fit, then how many were left out", () => {
  assert.equal(joinedMessages(["a", "b"]), "a; b");
  const many = Array.from({ length: 500 }, (_, i) => `problem ${i} ${"y".repeat(50)}`);
  const joined = joinedMessages(many, 1000);
  assert.ok(joined.length <= 1000, `${joined.length}`);
  const kept = joined.split("; ").length - 1;
  assert.match(joined, new RegExp(`; and ${500 - kept} more problems left out$`));
  const huge = joinedMessages(["z".repeat(5000), "b"], 1000);
  assert.ok(huge.length <= 1000);
  assert.match(huge, /characters left out\); and 1 more problem left out$/);
});

Deno.test("messages: 40 KiB of refusals still give a status with the problem", async () => {
  const op = new FakeOperator();
  const ports = Array.from({ length: 8 }, (_, i) => ({ name: `db${i}`, image: "db", ports: [80] }));
  await op.create("big", {
    containers: [{ image: "app", command: "hostname", runFlux: true }, ...ports],
  } as never);
  const refusal = new ApiError({
    code: 403,
    reason: "Forbidden",
    message: `denied by policy: ${"reason ".repeat(700)}`,
  });
  op.api.react((r) => r.resource === "services" && r.verb === "apply" ? refusal : undefined);
  await op.reconcile("big");
  op.sync();
  op.time += 1_000;
  await op.reconcile("big");
  const c = op.condition("big", "Unappliable");
  assert.equal(c?.reason, "ApiError");
  assert.ok(c!.message!.length <= MAX_CONDITION_MESSAGE, `${c!.message!.length} characters`);
  assert.match(c!.message!, /more problems? left out$/);
});
