// spec.gang against the real API server, whichever the suite runs. Where the API server serves
// gang scheduling (Kubernetes 1.37 with the feature gate GenericWorkload on and
// scheduling.k8s.io/v1beta1 served), the PodGroup exists before the Job whose pods name it, its
// minCount follows the size, and turning the gang off is reported, not applied. Elsewhere (before
// 1.36, the gate off, PodGroups not served) the MiniCluster runs unganged and its GangScheduling
// condition says why, with one Warning Event. Which case applies is read from the API server
// itself (testing/gang_cluster.ts).
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs } from "../../runtime/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { gangScheduling, servesGangs } from "../../testing/gang_cluster.ts";
import { jobPodGroup, type PodGroup } from "../../controllers/minicluster/children/gang.ts";
import { PodGroups } from "../../controllers/minicluster/pod_group.ts";
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
  "gang: the pods name a PodGroup where the API serves it, else unganged and said",
  async (env) => {
    const { client, namespace } = env;
    const cluster = await gangScheduling(env.kubeconfig);
    const minCount = async () =>
      (await client.get<PodGroup>(PodGroups, namespace, "gang")).spec?.schedulingPolicy?.gang
        ?.minCount;
    const parallelism = (want: number) =>
      eventually(async () => {
        const j = await client.get<Job>(Jobs, namespace, "gang");
        if (j.spec?.parallelism !== want) throw new Error(`parallelism ${j.spec?.parallelism}`);
        return j;
      });
    await withOperator(env, async (op) => {
      await client.create(
        MiniClusters,
        miniCluster("gang", namespace, { size: 3, maxSize: 4, gang: {} }),
      );
      const job = await eventually(() => client.get<Job>(Jobs, namespace, "gang"), {
        timeoutMs: 20_000,
      });
      if (servesGangs(cluster)) {
        assert.equal(jobPodGroup(job), "gang", "the pods name the PodGroup");
        const group = await client.get<PodGroup>(PodGroups, namespace, "gang");
        assert.ok(
          Date.parse(group.metadata!.creationTimestamp!) <=
            Date.parse(job.metadata!.creationTimestamp!),
          "the PodGroup is there before the Job",
        );
        assert.equal(await minCount(), 3, "minCount defaults to size");
        // Scaling moves minCount with the Job's pods.
        await client.patch(MiniClusters, namespace, "gang", { spec: { size: 2 } }, "merge");
        await parallelism(2);
        await eventually(async () => assert.equal(await minCount(), 2));
        await quiescent(op); // the PodGroup and Job as the API server holds them match: no loop
        // Whether the Job is ganged is fixed at its creation: turning it off is reported.
        await client.patch(MiniClusters, namespace, "gang", { spec: { gang: null } }, "merge");
        const c = await waitForCondition(env, "gang", "Unappliable", "True", "JobFieldsImmutable");
        assert.match(c.message ?? "", /spec\.template\.spec\.schedulingGroup/);
        assert.equal(jobPodGroup(await client.get<Job>(Jobs, namespace, "gang")), "gang");
        return;
      }
      assert.equal(jobPodGroup(job), undefined, "the Job was created without a gang");
      const c = await waitForCondition(env, "gang", "GangScheduling", "False", "Unavailable");
      const why = cluster.genericWorkload === undefined
        ? /refused the pods' schedulingGroup: 400 BadRequest: .*unknown field "spec\.template\.spec\.schedulingGroup"/
        : cluster.genericWorkload === false
        ? /dropped its pods' schedulingGroup/
        : /does not serve scheduling\.k8s\.io\/v1beta1 PodGroups/;
      assert.match(c.message ?? "", why);
      assert.match(c.message ?? "", /scheduled one by one/);
      const mc = await getMiniCluster(env, "gang");
      const unappliable = mc.status?.conditions?.find((x) => x.type === "Unappliable");
      assert.equal(unappliable?.status, "False", "an unganged Job is not an unapplied spec");
      // One Warning when the condition appeared, none for reconciles that leave it as it is.
      await client.patch(MiniClusters, namespace, "gang", { spec: { size: 2 } }, "merge");
      await parallelism(2);
      await quiescent(op);
      const warnings = (await eventsFor(env, "gang")).filter((e) => e.reason === "Unavailable");
      assert.equal(warnings.length, 1, JSON.stringify(warnings));
      assert.equal(warnings[0].type, "Warning");
      assert.equal(warnings[0].count ?? 1, 1);
    });
  },
);
