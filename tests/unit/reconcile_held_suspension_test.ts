// A Job suspended while the spec does not suspend it: whether the operator resumes it is read from
// the live Job's managedFields (the caches keep none). While someone else holds it, that read is
// made once per version of the Job, not at every reconcile.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const jobReads = (op: FakeOperator) =>
  op.requestsSince().filter((r) => r.verb === "get" && r.resource === "jobs.batch").length;

Deno.test("reconcile held suspension: a Job held by someone else is read once per version", async () => {
  const op = new FakeOperator();
  await op.create("held");
  await op.converge("held");
  // A queue controller suspends the Job (the fake keeps no managedFields: nobody owns the field,
  // as after a webhook's suspension at creation, which is not the operator's to undo).
  await op.api.patch(Jobs, NS, "held", { spec: { suspend: true } }, "merge");
  op.sync();
  op.requestsSince();

  await op.reconcile("held");
  assert.equal(jobReads(op), 1, "the live Job is read to see who suspended it");
  assert.equal(op.api.peek<Job>(Jobs, NS, "held")?.spec?.suspend, true, "left to the queue");
  assert.equal(op.condition("held", "Suspended")?.reason, "WaitingForAdmission");
  op.sync();
  op.requestsSince();
  await op.reconcile("held");
  await op.reconcile("held");
  assert.equal(jobReads(op), 0, "the same version of the Job is not read again");
  assert.deepEqual(op.writesSince(), []);

  // The Job changes (here its labels): read again.
  await op.api.patch(Jobs, NS, "held", { metadata: { labels: { queued: "yes" } } }, "merge");
  op.sync();
  op.requestsSince();
  await op.reconcile("held");
  assert.equal(jobReads(op), 1);
});
