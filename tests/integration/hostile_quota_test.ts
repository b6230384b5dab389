// A hostile environment (issue 27, defect 8): a ResourceQuota that refuses one kind of child, then
// allows it: the CURVE Secret, and the headless Service (the same test for each kind).
//
// The quota admission plugin is on in every kube-apiserver, but usage is computed by
// kube-controller-manager's quota controller, which a private control plane does not run: the test
// writes the quota's status itself (hard and used), as that controller would.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ResourceQuota } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import type { KubeObject } from "../../runtime/cache/store.ts";
import {
  Jobs,
  type ResourceType,
  resourceType,
  Secrets,
  Services,
} from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import {
  curveSecretName,
  headlessServiceName,
} from "../../controllers/minicluster/children/names.ts";
import { eventually, integrationTest, type TestEnv } from "../harness.ts";
import {
  eventsFor,
  exists,
  miniCluster,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

const ResourceQuotas = resourceType("", "v1", "resourcequotas", "ResourceQuota", true);

/** A kind of child the quota refuses: its object-count resource and the child's name. */
interface Refused {
  quota: string;
  rt: ResourceType;
  /** As the operator's request metrics name the resource. */
  resource: string;
  name(mc: MiniCluster): string;
}

const CASES: [string, Refused][] = [
  ["CURVE Secret", {
    quota: "count/secrets",
    rt: Secrets,
    resource: "secrets",
    name: curveSecretName,
  }],
  ["headless Service", {
    quota: "count/services",
    rt: Services,
    resource: "services",
    name: headlessServiceName,
  }],
];

/** Sets the quota's limit in spec and status, with the usage the quota controller would report. */
async function limitTo(env: TestEnv, resource: string, hard: number, used: number) {
  const quota: ResourceQuota = {
    apiVersion: "v1",
    kind: "ResourceQuota",
    metadata: { name: "children", namespace: env.namespace },
    spec: { hard: { [resource]: String(hard) } },
  };
  await env.client.apply(ResourceQuotas, quota, { fieldManager: "test", force: true });
  await env.client.apply(ResourceQuotas, {
    ...quota,
    status: { hard: { [resource]: String(hard) }, used: { [resource]: String(used) } },
  }, { fieldManager: "test", force: true, subresource: "status" });
}

for (const [what, refused] of CASES) {
  integrationTest(
    `hostile quota: a refused ${what} holds the Job back, is reported and retried until the quota allows it`,
    async (env) => {
      await limitTo(env, refused.quota, 0, 0);
      await withOperator(env, async (op) => {
        const mc = miniCluster("quota", env.namespace);
        await env.client.create(MiniClusters, mc);

        // The refusal is a condition with the API's message, and an Event.
        const refusal = await waitForCondition(
          env,
          "quota",
          "Unappliable",
          "True",
          "QuotaExceeded",
        );
        assert.match(refusal.message ?? "", /exceeded quota/, refusal.message);
        // The Event goes out after the status write (at low priority), so it may land just after
        // the condition shows.
        await eventually(async () => {
          const events = await eventsFor(env, "quota");
          assert.ok(
            events.some((e) => /exceeded quota/.test(e.message ?? "")),
            `an Event names the refusal: ${events.map((e) => e.message).join(" | ")}`,
          );
        });

        // Retried with growing delays, and no Job without the child meanwhile.
        await new Promise((r) => setTimeout(r, 5_000));
        assert.ok(!(await exists(env, Jobs, "quota")), `the Job waits for its ${what}`);
        const attempts = op.requests.filter((r) =>
          r.resource === refused.resource && r.code === 403 && r.verb !== "get"
        ).length;
        assert.ok(attempts >= 2, `the write is retried (${attempts} attempts)`);
        assert.ok(attempts < 30, `with backoff, not in a hot loop (${attempts} attempts in 5 s)`);

        // The quota is raised: the child is made, the Job follows, and nothing says the CURVE
        // key was made again.
        await limitTo(env, refused.quota, 10, 0);
        const raised = Date.now();
        const child = await eventually(
          () =>
            env.client.get<KubeObject>(refused.rt, env.namespace, refused.name(mc)),
          { timeoutMs: 90_000, intervalMs: 250 },
        );
        console.log(
          `hostile quota: ${what}: ${attempts} refused writes before the check, made ` +
            `${Date.now() - raised} ms after the quota was raised`,
        );
        const job = await eventually(() => env.client.get<Job>(Jobs, env.namespace, "quota"), {
          timeoutMs: 20_000,
        });
        assert.ok(
          Date.parse(child.metadata!.creationTimestamp!) <=
            Date.parse(job.metadata!.creationTimestamp!),
          `the ${what} predates the Job`,
        );
        await waitForCondition(env, "quota", "Unappliable", "False");
        const regenerated = (await eventsFor(env, "quota")).filter((e) =>
          e.reason === "CurveCertificateRegenerated" || /generated again/.test(e.message ?? "")
        );
        assert.deepEqual(regenerated.map((e) => e.message), []);
      });
    },
    { timeoutMs: 180_000 },
  );
}
