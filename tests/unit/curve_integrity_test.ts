// The generated CURVE certificate changed behind the operator's back: a deleted Secret is generated
// again (and reported: the running brokers keep the old key), an edited one is reported (never
// silently rewritten), both as the Unappliable condition with an Event.
import assert from "node:assert/strict";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import { CURVE_DIGEST_ANNOTATION } from "../../controllers/minicluster/policy/curve_integrity.ts";
import { Secrets } from "../../runtime/client/resources.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

async function running(): Promise<FakeOperator> {
  const op = new FakeOperator();
  await op.create("flux", { size: 2 });
  await op.converge("flux");
  op.seedPods("flux", 2, 2);
  await op.converge("flux");
  assert.equal(op.condition("flux", "Unappliable")?.status, "False");
  return op;
}

Deno.test("curve integrity: the generated Secret records the digest of its certificate", async () => {
  const op = await running();
  const secret = op.api.peek<Secret>(Secrets, NS, "flux-curve-cert")!;
  assert.match(secret.metadata?.annotations?.[CURVE_DIGEST_ANNOTATION] ?? "", /^digest:\d+:/);
});

Deno.test("curve integrity: a deleted Secret is generated again and reported", async () => {
  const op = await running();
  const before = op.api.peek<Secret>(Secrets, NS, "flux-curve-cert")!;
  op.time += 5_000;
  await op.api.delete(Secrets, NS, "flux-curve-cert");
  op.sync();
  await op.converge("flux");
  const after = op.api.peek<Secret>(Secrets, NS, "flux-curve-cert")!;
  assert.notEqual(after.metadata?.uid, before.metadata?.uid, "generated again");
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "CurveCertificateRegenerated");
  assert.match(c!.message!, /brokers started before hold the old key/);
  assert.ok(op.events("flux").includes("CurveCertificateRegenerated"));
});

Deno.test("curve integrity: an edited certificate is reported, not rewritten", async () => {
  const op = await running();
  await op.api.patch(Secrets, NS, "flux-curve-cert", {
    data: { "curve.cert": btoa("tampered") },
  }, "merge");
  op.sync();
  await op.converge("flux");
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.reason, "CurveCertificateChanged");
  assert.match(c!.message!, /is not the one the operator generated/);
  assert.equal(
    op.api.peek<Secret>(Secrets, NS, "flux-curve-cert")?.data?.["curve.cert"],
    btoa("tampered"),
    "left as it is",
  );
  assert.ok(op.events("flux").includes("CurveCertificateChanged"));
});
