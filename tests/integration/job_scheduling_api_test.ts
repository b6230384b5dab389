/**
 * The Job field `spec.scheduling` on the real kube-apiserver of the local cluster, against the
 * hand-written types of api/job_scheduling.ts: from 1.37 (the cluster starts it with the
 * Workload gates, hack/cluster/kubernetes_version.ts) a Job using every field of the types is
 * accepted under strict field validation (an unknown field name would be an error) and read
 * back as written; gang minCount may change, the policy may not; the Workload and PodGroup API
 * is served. Before 1.37 the apiserver drops the field.
 */
import assert from "node:assert/strict";
import type { JobSchedulingConfiguration, ScheduledJob } from "../../api/job_scheduling.ts";
import { parseKubernetesVersion } from "../../hack/cluster/kubernetes_version.ts";
import type { KubeClient } from "../../runtime/client.ts";
import { ApiError } from "../../runtime/errors.ts";
import { Jobs, resourcePath } from "../../runtime/resources.ts";
import { integrationTest } from "../harness.ts";

const SCHEDULING: JobSchedulingConfiguration = {
  schedulingPolicy: { gang: { minCount: 2 } },
  schedulingConstraints: { topology: [{ key: "topology.kubernetes.io/zone" }] },
  disruptionMode: { all: {} },
  resourceClaims: [{ name: "shared", resourceClaimTemplateName: "shared-template" }],
};

function ganged(name: string, scheduling: JobSchedulingConfiguration): ScheduledJob {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name },
    spec: {
      completionMode: "Indexed",
      completions: 3,
      parallelism: 3,
      // Suspended: only the apiserver's handling of the field is under test here.
      suspend: true,
      scheduling,
      template: {
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "main", image: "busybox", command: ["true"] }],
        },
      },
    },
  };
}

function createStrict(client: KubeClient, namespace: string, job: ScheduledJob) {
  return client.request<ScheduledJob>(
    "POST",
    resourcePath(Jobs, { namespace }),
    { ...job, metadata: { ...job.metadata, namespace } },
    { query: { fieldValidation: "Strict" }, verb: "create", resource: "jobs" },
  );
}

async function minor(client: KubeClient): Promise<number> {
  const v = await client.request<{ gitVersion: string }>("GET", "/version");
  return parseKubernetesVersion(v.gitVersion).minor;
}

/** Before 1.37: the create is refused, the field named. */
async function assertUnknown(create: Promise<unknown>): Promise<void> {
  await assert.rejects(
    create,
    (e) =>
      e instanceof ApiError && e.code === 400 && /unknown field "spec.scheduling"/.test(e.message),
  );
}

integrationTest("Job spec.scheduling: every typed field accepted strictly on 1.37", async (env) => {
  const create = createStrict(env.client, env.namespace, ganged("typed", SCHEDULING));
  if (await minor(env.client) < 37) return await assertUnknown(create);
  const job = await create;
  assert.deepEqual(job.spec?.scheduling, SCHEDULING);

  const groups = await env.client.request<{ resources: { name: string }[] }>(
    "GET",
    "/apis/scheduling.k8s.io/v1beta1",
  );
  const served = groups.resources.map((r) => r.name);
  for (const r of ["workloads", "podgroups"]) assert.ok(served.includes(r), `${r}: ${served}`);
});

integrationTest(
  "Job spec.scheduling: gang minCount may change, the policy may not",
  async (env) => {
    const name = "gang";
    const create = createStrict(
      env.client,
      env.namespace,
      ganged(name, { schedulingPolicy: { gang: {} } }),
    );
    if (await minor(env.client) < 37) return await assertUnknown(create);
    await create;
    const patch = (scheduling: unknown) =>
      env.client.patch<ScheduledJob>(Jobs, env.namespace, name, { spec: { scheduling } }, "merge");

    const changed = await patch({ schedulingPolicy: { gang: { minCount: 2 } } });
    assert.equal(changed.spec?.scheduling?.schedulingPolicy?.gang?.minCount, 2);

    await assert.rejects(
      () => patch({ schedulingPolicy: { gang: { minCount: 4 } } }),
      (e) => e instanceof ApiError && e.code === 422,
      "minCount above parallelism",
    );
    await assert.rejects(
      () => patch({ schedulingPolicy: { gang: null, basic: {} } }),
      (e) => e instanceof ApiError && e.code === 422,
      "gang to basic",
    );
  },
);
