// A write that keeps failing surfaces (issue 18, defect 5): a Job over etcd's size limit fails as a
// server error ("etcdserver: request is too large", what the real apiserver answers an apply of
// ~2 MB), which the controller retried 22 times over 8½ minutes with no status and no Event.
import assert from "node:assert/strict";
import { ApiError } from "../../runtime/client/errors.ts";
import { ConfigMaps, Jobs } from "../../runtime/client/resources.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const tooLarge = new ApiError({ code: 500, message: "etcdserver: request is too large" });

Deno.test("failing write: reported from the first retry on, still thrown for the backoff", async () => {
  const op = new FakeOperator();
  await op.create("big");
  const stop = op.api.react((r) =>
    r.resource === "jobs.batch" && r.verb === "apply" ? tooLarge : undefined
  );
  await assert.rejects(op.reconcile("big"), /request is too large/);
  op.sync();
  assert.equal(op.condition("big", "Unappliable"), undefined, "one failure reports nothing");
  assert.ok(op.api.peek(ConfigMaps, NS, "big-entrypoint"), "the first wave went ahead");

  await assert.rejects(op.reconcile("big", 1), /request is too large/);
  const c = op.condition("big", "Unappliable");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "WriteFailing");
  assert.match(c!.message!, /^Job big: 500 .*etcdserver: request is too large \(retrying/);
  assert.ok(op.events("big").includes("WriteFailing"), `events: ${op.events("big")}`);

  // Once the write goes through, the condition clears.
  stop();
  op.sync();
  await op.converge("big");
  assert.ok(op.api.peek(Jobs, NS, "big"));
  op.time += 60_000;
  op.sync();
  await op.converge("big");
  assert.equal(op.condition("big", "Unappliable")?.status, "False");
});
