// The Events of a status change announce what is stored (issue 36, item 9): a status write the
// server refuses must not leave Events behind that tell of conditions nobody can read.
import assert from "node:assert/strict";
import { MiniClusters } from "../../api/resource.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const STATUS = "miniclusters.flux-framework.org/status";

/** A MiniCluster of two ready pods, then suspended by its user: the reconcile applies the Job suspended. */
async function suspendedReady(): Promise<FakeOperator> {
  const op = new FakeOperator({ pacingOff: ["first-status-delay"] });
  await op.create("flux", { size: 2 });
  await op.reconcile("flux");
  op.sync();
  op.seedPods("flux", 2, 2);
  await op.converge("flux");
  assert.equal(op.condition("flux", "Ready")?.status, "True");
  await op.api.patch(MiniClusters, NS, "flux", { spec: { suspend: true } }, "merge");
  op.sync();
  return op;
}

for (
  const refusal of [
    new ApiError({ code: 422, message: "denied by a ValidatingAdmissionPolicy" }),
    new ApiError({ code: 500, message: "etcdserver: leader changed" }),
  ]
) {
  Deno.test(`status events: a status write refused with ${refusal.code} emits no Event`, async () => {
    const op = await suspendedReady();
    const before = op.events("flux");
    op.api.react((r) => r.resource === STATUS ? refusal : undefined);
    op.requestsSince();
    await assert.rejects(op.reconcile("flux"), new RegExp(refusal.message));
    const writes = op.writesSince();
    assert.ok(writes.includes("apply jobs.batch flux"), `the Job was suspended: ${writes}`);
    assert.ok(writes.includes(`apply ${STATUS} flux`), `the status was tried: ${writes}`);
    assert.equal(op.condition("flux", "Ready")?.status, "True", "the stored status is unchanged");
    assert.deepEqual(op.events("flux"), before, "an Event announced a status that was refused");
  });
}

Deno.test("status events: a MiniCluster gone before its status was written gets no Event", async () => {
  const op = await suspendedReady();
  const before = op.events("flux");
  op.api.react((r) =>
    r.resource === STATUS
      ? new ApiError({ code: 404, reason: "NotFound", message: 'miniclusters "flux" not found' })
      : undefined
  );
  op.requestsSince();
  await op.reconcile("flux");
  assert.ok(op.writesSince().includes(`apply ${STATUS} flux`), "the status was tried");
  assert.deepEqual(op.events("flux"), before, "an Event announced a status that was never stored");
});

Deno.test("status events: the Events follow the stored status", async () => {
  const op = await suspendedReady();
  const before = op.events("flux");
  op.requestsSince();
  await op.reconcile("flux");
  const writes = op.writesSince();
  const status = writes.indexOf(`apply ${STATUS} flux`);
  const event = writes.findIndex((w) => w.startsWith("create events"));
  assert.ok(status >= 0 && event > status, `the Event after the status: ${writes}`);
  assert.equal(op.condition("flux", "Ready")?.reason, "Suspended");
  assert.deepEqual(op.events("flux"), [...before, "Suspended", "Suspended"], "Ready and Suspended");
});
