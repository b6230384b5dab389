// The CURVE certificate by reference (issue 27, defect 6): `spec.flux.curveCertSecretRef` names a
// Secret of the namespace, so that the secret key is not in the MiniCluster, which the `view` role
// reads; `--inline-curve-cert=refuse` refuses the inline field.
import assert from "node:assert/strict";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import {
  curveCertFromSecret,
  curveCertificateText,
  generateCurveCertificate,
} from "../../controllers/minicluster/children/curve.ts";
import { CURVE_SECRET_RECHECK_MS } from "../../controllers/minicluster/policy/curve_source.ts";
import { Jobs, Secrets } from "../../runtime/client/resources.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const base64 = (text: string) => btoa(text);

async function userSecret(op: FakeOperator, name: string, data: Record<string, string>) {
  await op.api.create<Secret>(Secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: NS },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, base64(v)])),
  });
}

Deno.test("curve ref: a missing Secret is reported and looked for again; once there, its certificate is the cluster's", async () => {
  const op = new FakeOperator();
  await op.create("r", { flux: { curveCertSecretRef: { name: "my-cert" } } });
  const action = await op.reconcile("r");
  op.sync();
  assert.equal(op.api.peek(Jobs, NS, "r"), undefined, "no Job without the certificate");
  assert.equal(op.api.peek(Secrets, NS, "r-curve-cert"), undefined, "no key generated instead");
  const c = op.condition("r", "Unappliable");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "CurveCertSecretMissing");
  assert.match(c!.message!, /^spec\.flux\.curveCertSecretRef: Secret my-cert does not exist/);
  assert.ok(op.events("r").includes("CurveCertSecretMissing"), `events: ${op.events("r")}`);
  assert.equal(action.requeueAfter, CURVE_SECRET_RECHECK_MS);

  // A Secret without the key is no better.
  const cert = await generateCurveCertificate();
  await userSecret(op, "my-cert", { other: cert.text });
  op.time += 60_000; // past the status writer's interval for a message-only change
  await op.reconcile("r");
  op.sync();
  assert.match(op.condition("r", "Unappliable")!.message!, /Secret my-cert has no key curve\.cert/);

  await op.api.delete(Secrets, NS, "my-cert");
  await userSecret(op, "my-cert", { "curve.cert": cert.text });
  op.time += CURVE_SECRET_RECHECK_MS;
  await op.converge("r");
  const copied = op.api.peek<Secret>(Secrets, NS, "r-curve-cert");
  assert.equal(curveCertFromSecret(copied), cert.text);
  assert.ok(op.api.peek(Jobs, NS, "r"));
  op.time += 60_000;
  op.sync();
  await op.converge("r");
  assert.equal(op.condition("r", "Unappliable")?.status, "False");
  // The key is nowhere in the MiniCluster.
  assert.ok(!JSON.stringify(op.miniCluster("r")).includes(cert.secretKey));
});

Deno.test("curve ref: the referenced certificate is checked as Flux would, under its own key name", async () => {
  const op = new FakeOperator();
  const a = await generateCurveCertificate();
  const b = await generateCurveCertificate();
  await userSecret(op, "mixed", { flux: curveCertificateText(a.publicKey, b.secretKey) });
  await op.create("m", { flux: { curveCertSecretRef: { name: "mixed", key: "flux" } } });
  await op.reconcile("m");
  const c = op.condition("m", "SpecInvalid");
  assert.equal(c?.status, "True");
  assert.match(
    c!.message!,
    /^spec\.flux\.curveCertSecretRef: Secret mixed, key flux: .*not the secret-key's public key/,
  );
  assert.ok(!c!.message!.includes(b.secretKey), "the message holds no key");
  assert.equal(op.api.peek(Jobs, NS, "m"), undefined);
});

Deno.test("curve ref: --inline-curve-cert=refuse refuses flux.curveCert, allow (the default) takes it", async () => {
  const cert = await generateCurveCertificate();
  const refusing = new FakeOperator({ inlineCurveCert: "refuse" });
  await refusing.create("i", { flux: { curveCert: cert.text } });
  await refusing.reconcile("i");
  const c = refusing.condition("i", "SpecInvalid");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "InlineCurveCertRefused");
  assert.match(c!.message!, /curveCertSecretRef/);
  assert.equal(refusing.api.peek(Secrets, NS, "i-curve-cert"), undefined);

  const allowing = new FakeOperator();
  await allowing.create("i", { flux: { curveCert: cert.text } });
  await allowing.converge("i");
  assert.equal(
    curveCertFromSecret(allowing.api.peek<Secret>(Secrets, NS, "i-curve-cert")),
    cert.text,
  );
});
