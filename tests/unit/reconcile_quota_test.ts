// A child refused by a ResourceQuota (issue 27, defect 8): the refusal (403 Forbidden, "exceeded
// quota") lasts only until the quota is raised or other objects go, so it is retried with backoff
// like a transient failure, and the Job waits for what its pods mount.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { ConfigMaps, Jobs, Secrets } from "../../runtime/client/resources.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const quotaRefusal = new ApiError({
  code: 403,
  reason: "Forbidden",
  message: 'secrets "q-curve-cert" is forbidden: exceeded quota: children, requested: ' +
    "count/secrets=1, used: count/secrets=0, limited: count/secrets=0",
});

Deno.test("quota: a refused CURVE Secret holds the Job back, is reported, retried, then made before the Job", async () => {
  const op = new FakeOperator();
  await op.create("q");
  const stop = op.api.react((r) =>
    r.resource === "secrets" && r.verb === "apply" ? quotaRefusal : undefined
  );

  // Thrown, so that the controller retries it with its growing per-key backoff.
  await assert.rejects(op.reconcile("q"), /exceeded quota/);
  op.sync();
  assert.equal(op.api.peek(Jobs, NS, "q"), undefined, "no Job without its CURVE Secret");
  assert.ok(op.api.peek(ConfigMaps, NS, "q-entrypoint"), "the rest of the first wave went ahead");

  // From the first retry on, a condition and an Event carry the API's message.
  await assert.rejects(op.reconcile("q", 1), /exceeded quota/);
  op.sync();
  assert.equal(op.api.peek(Jobs, NS, "q"), undefined, "still no Job");
  const c = op.condition("q", "Unappliable");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "QuotaExceeded");
  assert.match(c!.message!, /^Secret q-curve-cert: 403 Forbidden: .*exceeded quota: children/);
  assert.ok(op.events("q").includes("QuotaExceeded"), `events: ${op.events("q")}`);

  // The quota is raised: the Secret comes first, then the Job, and no key was "regenerated".
  stop();
  op.time += 10_000;
  await op.converge("q");
  const secret = op.api.peek<Secret>(Secrets, NS, "q-curve-cert");
  const job = op.api.peek<Job>(Jobs, NS, "q");
  assert.ok(secret && job);
  assert.ok(
    Date.parse(secret.metadata!.creationTimestamp!) <= Date.parse(job.metadata!.creationTimestamp!),
  );
  op.time += 60_000;
  op.sync();
  await op.converge("q");
  assert.equal(op.condition("q", "Unappliable")?.status, "False");
  assert.ok(
    !op.events("q").includes("CurveCertificateRegenerated"),
    `events: ${op.events("q")}`,
  );
});

Deno.test("quota: a refused Service is retried too, and the rest goes ahead", async () => {
  const op = new FakeOperator();
  await op.create("s");
  const stop = op.api.react((r) =>
    r.resource === "services" && r.verb === "apply"
      ? new ApiError({
        code: 403,
        reason: "Forbidden",
        message: 'services "s" is forbidden: exceeded quota: children, requested: ' +
          "count/services=1, used: count/services=0, limited: count/services=0",
      })
      : undefined
  );
  await assert.rejects(op.reconcile("s"), /exceeded quota/);
  op.sync();
  assert.ok(op.api.peek(Secrets, NS, "s-curve-cert"));
  stop();
  await op.converge("s");
  assert.ok(op.api.peek(Jobs, NS, "s"));
});

Deno.test("held back: a CURVE Secret refused for good keeps the Job from being made without it", async () => {
  const op = new FakeOperator();
  await op.create("w");
  const stop = op.api.react((r) =>
    r.resource === "secrets" && r.verb === "apply"
      ? new ApiError({
        code: 403,
        reason: "Forbidden",
        message: 'admission webhook "secrets.example.com" denied the request: no Secrets here',
      })
      : undefined
  );
  for (let i = 0; i < 3; i++) {
    await op.reconcile("w");
    op.sync();
  }
  assert.equal(op.api.peek(Jobs, NS, "w"), undefined, "no Job without its CURVE Secret");
  const c = op.condition("w", "Unappliable");
  assert.equal(c?.status, "True");
  assert.match(c!.message!, /^Secret w-curve-cert: 403 Forbidden: admission webhook/);

  stop();
  await op.converge("w");
  assert.ok(op.api.peek(Jobs, NS, "w"));
});
