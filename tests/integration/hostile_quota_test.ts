// A hostile environment (issue 27, defect 8): a ResourceQuota that refuses one kind of child, then
// allows it. The child here is the CURVE Secret; the same shape fits any kind in `REFUSED`.
//
// The quota admission plugin is on in every kube-apiserver, but usage is computed by
// kube-controller-manager's quota controller, which a private control plane does not run: the test
// writes the quota's status itself (hard and used), as that controller would.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ResourceQuota, Secret } from "kubernetes-types/core/v1.d.ts";
import { isNotFound } from "../../runtime/errors.ts";
import { Jobs, resourceType, Secrets } from "../../runtime/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { curveSecretName } from "../../controllers/minicluster/children/names.ts";
import { eventually, integrationTest, type TestEnv } from "../harness.ts";
import {
  condition,
  eventsFor,
  miniCluster,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

const ResourceQuotas = resourceType("", "v1", "resourcequotas", "ResourceQuota", true);

/** The quota's resource: object count of the refused kind. */
const REFUSED = "count/secrets";

/** Sets the quota's limit in spec and status, with the usage the quota controller would report. */
async function limitTo(env: TestEnv, hard: number, used: number): Promise<void> {
  const quota: ResourceQuota = {
    apiVersion: "v1",
    kind: "ResourceQuota",
    metadata: { name: "children", namespace: env.namespace },
    spec: { hard: { [REFUSED]: String(hard) } },
  };
  await env.client.apply(ResourceQuotas, quota, { fieldManager: "test", force: true });
  await env.client.apply(ResourceQuotas, {
    ...quota,
    status: { hard: { [REFUSED]: String(hard) }, used: { [REFUSED]: String(used) } },
  }, { fieldManager: "test", force: true, subresource: "status" });
}

async function absent(env: TestEnv, rt: typeof Jobs, name: string): Promise<boolean> {
  try {
    await env.client.get(rt, env.namespace, name);
    return false;
  } catch (e) {
    if (isNotFound(e)) return true;
    throw e;
  }
}

integrationTest(
  "hostile quota: a refused CURVE Secret holds the Job back, is reported and retried until the quota allows it",
  async (env) => {
    await limitTo(env, 0, 0);
    await withOperator(env, async (op) => {
      const mc = miniCluster("quota", env.namespace);
      await env.client.create(MiniClusters, mc);

      // The refusal is a condition with the API's message, and an Event.
      const refused = await waitForCondition(env, "quota", "Unappliable", "True", "QuotaExceeded");
      assert.match(refused.message ?? "", /exceeded quota/, refused.message);
      const events = await eventsFor(env, "quota");
      assert.ok(
        events.some((e) => /exceeded quota/.test(e.message ?? "")),
        `an Event names the refusal: ${events.map((e) => e.message).join(" | ")}`,
      );

      // Retried with growing delays, and no Job without its Secret meanwhile.
      await new Promise((r) => setTimeout(r, 5_000));
      assert.ok(await absent(env, Jobs, "quota"), "the Job waits for its CURVE Secret");
      const attempts = op.requests.filter((r) =>
        r.resource === "secrets" && r.code === 403 && r.verb !== "get"
      ).length;
      assert.ok(attempts >= 2, `the Secret's write is retried (${attempts} attempts)`);
      assert.ok(attempts < 30, `with backoff, not in a hot loop (${attempts} attempts in 5 s)`);

      // The quota is raised: the Secret is made, the Job follows, and nothing says it was made
      // again.
      await limitTo(env, 10, 0);
      const secret = await eventually(
        () => env.client.get<Secret>(Secrets, env.namespace, curveSecretName(mc)),
        { timeoutMs: 90_000, intervalMs: 250 },
      );
      const job = await eventually(() => env.client.get<Job>(Jobs, env.namespace, "quota"), {
        timeoutMs: 20_000,
      });
      assert.ok(
        Date.parse(secret.metadata!.creationTimestamp!) <=
          Date.parse(job.metadata!.creationTimestamp!),
        "the Secret predates the Job",
      );
      await waitForCondition(env, "quota", "Unappliable", "False");
      const after = await condition(env, "quota", "Unappliable");
      assert.doesNotMatch(after.reason ?? "", /CurveCertificate/);
      const regenerated = (await eventsFor(env, "quota")).filter((e) =>
        e.reason === "CurveCertificateRegenerated" ||
        /generated again/.test(e.message ?? "")
      );
      assert.deepEqual(regenerated.map((e) => e.message), []);
    });
  },
  { timeoutMs: 180_000 },
);
