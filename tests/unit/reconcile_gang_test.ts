// spec.gang on the fake API server: the Job's gang policy, its minCount following the size in the
// same patch as parallelism, turning it off reported as an immutable field, and an API server that
// refuses spec.scheduling: the MiniCluster runs unganged, says why once, and asks again only when
// the answer is old.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { ApiError } from "../../runtime/errors.ts";
import { Jobs } from "../../runtime/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { gangMinCount, jobScheduling } from "../../controllers/minicluster/children/gang.ts";
import { GANG_SUPPORT_TTL_MS } from "../../controllers/minicluster/gang_support.ts";
import { FakeOperator, NS } from "./fake_operator.ts";

const job = (op: FakeOperator, name: string) => op.api.peek<Job>(Jobs, NS, name);

async function edit(op: FakeOperator, name: string, spec: Record<string, unknown>) {
  await op.api.patch(MiniClusters, NS, name, { spec }, "merge");
  op.sync();
  op.requestsSince();
}

/** What Kubernetes before 1.36 answers a Job with spec.scheduling under Strict validation. */
const unknownField = new ApiError({
  code: 400,
  reason: "BadRequest",
  message: 'Job in version "v1" cannot be handled as a Job: strict decoding error: ' +
    'unknown field "spec.scheduling"',
});

Deno.test("reconcile gang: the Job is ganged, minCount follows the size with parallelism", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 4, maxSize: 6, gang: {} });
  await op.converge("flux");
  assert.equal(gangMinCount(job(op, "flux")), 4);
  assert.equal(op.condition("flux", "Unappliable")?.status, "False");
  assert.equal(op.condition("flux", "GangScheduling")?.reason, "Pending");

  await edit(op, "flux", { size: 2 });
  await op.converge("flux");
  assert.equal(job(op, "flux")?.spec?.parallelism, 2);
  assert.equal(gangMinCount(job(op, "flux")), 2, "never above parallelism");
  await edit(op, "flux", { size: 5, gang: { minCount: 3 } });
  await op.converge("flux");
  assert.equal(job(op, "flux")?.spec?.parallelism, 5);
  assert.equal(gangMinCount(job(op, "flux")), 3);
  assert.equal(op.condition("flux", "Unappliable")?.status, "False");
});

Deno.test("reconcile gang: turning the gang off or on for a running Job is reported, not applied", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2, gang: {} });
  await op.converge("flux");
  await edit(op, "flux", { gang: null, size: 3, maxSize: 3 });
  await op.converge("flux");
  const off = op.condition("flux", "Unappliable");
  assert.equal(off?.reason, "JobFieldsImmutable");
  assert.match(off!.message!, /cannot take changes to spec\.scheduling/);
  assert.ok(jobScheduling(job(op, "flux")), "the Job keeps its gang");

  const plain = new FakeOperator();
  await plain.create("flux", { size: 2 });
  await plain.converge("flux");
  await edit(plain, "flux", { gang: {} });
  await plain.converge("flux");
  assert.equal(plain.condition("flux", "Unappliable")?.reason, "JobFieldsImmutable");
  const gang = plain.condition("flux", "GangScheduling");
  assert.equal(gang?.reason, "JobNotGanged");
  assert.match(gang!.message!, /applies when the MiniCluster is created again/);
  assert.equal(jobScheduling(job(plain, "flux")), undefined);
});

Deno.test("reconcile gang: an API server that refuses spec.scheduling: unganged, said once, asked again later", async () => {
  const op = new FakeOperator();
  op.api.react((r) =>
    r.verb === "create" && r.resource === "jobs.batch" ? unknownField : undefined
  );
  await op.create("flux", { size: 2, gang: {} });
  await op.converge("flux");
  assert.ok(job(op, "flux"), "the Job runs");
  assert.equal(jobScheduling(job(op, "flux")), undefined, "without a gang");
  const c = op.condition("flux", "GangScheduling");
  assert.equal(c?.status, "False");
  assert.equal(c?.reason, "Unavailable");
  assert.match(c!.message!, /refused the Job's spec\.scheduling: 400 BadRequest: .*unknown field/);
  assert.match(c!.message!, /scheduled one by one/);
  assert.equal(op.condition("flux", "Unappliable")?.status, "False");
  assert.deepEqual(op.events("flux").filter((r) => r === "Unavailable"), ["Unavailable"]);

  // Within the answer's lifetime no other dry run; a reconcile after it asks again.
  const probes = () =>
    op.requestsSince().filter((r) => r.verb === "create" && r.resource === "jobs.batch").length;
  await edit(op, "flux", { size: 1 });
  await op.converge("flux");
  assert.equal(probes(), 0);
  op.time += GANG_SUPPORT_TTL_MS;
  await edit(op, "flux", { size: 2 });
  await op.converge("flux");
  assert.equal(probes(), 1);
  assert.deepEqual(op.events("flux").filter((r) => r === "Unavailable"), ["Unavailable"]);
});

Deno.test("reconcile gang: the dry run stores nothing and a MiniCluster without a gang makes none", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2, gang: {} });
  await op.create("plain", { size: 2 });
  await op.converge("flux");
  await op.converge("plain");
  assert.deepEqual(op.api.objects<Job>(Jobs).map((j) => j.metadata?.name).sort(), [
    "flux",
    "plain",
  ]);
  assert.equal(op.condition("plain", "GangScheduling"), undefined, "no condition without a gang");
});
