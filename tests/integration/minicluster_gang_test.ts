// spec.gang against the real API server, whichever the suite runs. Where the API server serves Job
// gang scheduling (Kubernetes 1.37 with the feature gates GenericWorkload and WorkloadWithJob on,
// scheduling.k8s.io/v1beta1 served), the Job carries the gang, its minCount follows the size, and
// turning the gang off is reported, not applied. Elsewhere (before 1.36, the gate off, PodGroups
// not served) the MiniCluster runs unganged and its GangScheduling condition says why, with one
// Warning Event. Which case applies is read from the API server itself (testing/gang_cluster.ts).
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs } from "../../runtime/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { gangScheduling, servesGangs } from "../../testing/gang_cluster.ts";
import { gangMinCount, jobScheduling } from "../../controllers/minicluster/children/gang.ts";
import { eventually, integrationTest } from "../harness.ts";
import {
  eventsFor,
  getMiniCluster,
  miniCluster,
  quiescent,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

integrationTest(
  "gang: the Job is ganged where the API serves it, else unganged and said",
  async (env) => {
    const { client, namespace } = env;
    const cluster = await gangScheduling(env.kubeconfig);
    const gate = cluster.workloadWithJob;
    await withOperator(env, async (op) => {
      await client.create(
        MiniClusters,
        miniCluster("gang", namespace, { size: 3, maxSize: 4, gang: {} }),
      );
      const job = await eventually(() => client.get<Job>(Jobs, namespace, "gang"), {
        timeoutMs: 20_000,
      });
      if (servesGangs(cluster)) {
        assert.equal(gangMinCount(job), 3, "minCount defaults to size");
        // Scaling moves minCount with parallelism (one patch: never above it).
        await client.patch(MiniClusters, namespace, "gang", { spec: { size: 2 } }, "merge");
        const scaled = await eventually(async () => {
          const j = await client.get<Job>(Jobs, namespace, "gang");
          if (j.spec?.parallelism !== 2) throw new Error(`parallelism ${j.spec?.parallelism}`);
          return j;
        });
        assert.equal(gangMinCount(scaled), 2);
        await quiescent(op); // the ganged Job, as the API server holds it, matches: no write loop
        // Whether the Job is ganged is fixed at its creation: turning it off is reported.
        await client.patch(MiniClusters, namespace, "gang", { spec: { gang: null } }, "merge");
        const c = await waitForCondition(env, "gang", "Unappliable", "True", "JobFieldsImmutable");
        assert.match(c.message ?? "", /spec\.scheduling/);
        assert.equal(gangMinCount(await client.get<Job>(Jobs, namespace, "gang")), 2);
        return;
      }
      assert.equal(jobScheduling(job), undefined, "the Job was created without a gang");
      const c = await waitForCondition(env, "gang", "GangScheduling", "False", "Unavailable");
      const why = gate === undefined
        ? /refused the Job's spec\.scheduling: 400 BadRequest: .*unknown field "spec\.scheduling"/
        : gate === false
        ? /dropped its spec\.scheduling/
        : /does not serve scheduling\.k8s\.io\/v1beta1 PodGroups/;
      assert.match(c.message ?? "", why);
      assert.match(c.message ?? "", /scheduled one by one/);
      const mc = await getMiniCluster(env, "gang");
      const unappliable = mc.status?.conditions?.find((x) => x.type === "Unappliable");
      assert.equal(unappliable?.status, "False", "an unganged Job is not an unapplied spec");
      // One Warning when the condition appeared, none for reconciles that leave it as it is.
      await client.patch(MiniClusters, namespace, "gang", { spec: { size: 2 } }, "merge");
      await eventually(async () => {
        const j = await client.get<Job>(Jobs, namespace, "gang");
        if (j.spec?.parallelism !== 2) throw new Error(`parallelism ${j.spec?.parallelism}`);
      });
      await quiescent(op);
      const warnings = (await eventsFor(env, "gang")).filter((e) => e.reason === "Unavailable");
      assert.equal(warnings.length, 1, JSON.stringify(warnings));
      assert.equal(warnings[0].type, "Warning");
      assert.equal(warnings[0].count ?? 1, 1);
    });
  },
);
