// spec.gang against the real API server, whichever the suite runs. Where the API server serves
// gang scheduling (Kubernetes 1.37 with the feature gate GenericWorkload on and
// scheduling.k8s.io/v1beta1 served), the PodGroup exists before the Job whose pods name it, its
// minCount follows the size, and turning the gang off is reported, not applied. Elsewhere (before
// 1.36, the gate off, PodGroups not served) the MiniCluster runs unganged and its GangScheduling
// condition says why, with one Warning Event. Which case applies is read from the API server
// itself (testing/gang_cluster.ts). A ganged MiniCluster deleted and applied again at once gets
// its own PodGroup and Job (the predecessor's PodGroup is deleted by cleanup, and its going wakes
// the successor), and none is left after it; the PodGroup's watch, active only where PodGroups
// are served, neither fails nor holds up an operator where they are not.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { Jobs, type ResourceType, resourceType } from "../../runtime/client/resources.ts";
import { Watcher } from "../../runtime/watch/watcher.ts";
import { MiniClusters } from "../../api/resource.ts";
import { gangScheduling, servesGangs } from "../../testing/gang_cluster.ts";
import { jobPodGroup, type PodGroup } from "../../controllers/minicluster/children/gang.ts";
import { PodGroups } from "../../controllers/minicluster/gang/pod_group.ts";
import { eventually, fullCluster, integrationTest, type TestEnv } from "../harness.ts";
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

/** Gone from the API server (a 404), or throws for `eventually`. */
async function gone(env: TestEnv, rt: ResourceType, name: string): Promise<void> {
  try {
    await env.client.get(rt, env.namespace, name);
  } catch (e) {
    if (isNotFound(e)) return;
    throw e;
  }
  throw new Error(`${rt.kind} ${name} still exists`);
}

/**
 * What kube-controller-manager's podgroup-protection-controller does, for a control plane without
 * it (no controller manager): the PodGroup admission's protection finalizer is removed from a
 * PodGroup someone deleted once no pod names it (such a control plane runs no pods). On a full
 * cluster the real controller does it, and this does nothing.
 */
async function releaseDeletedPodGroup(env: TestEnv, name: string): Promise<void> {
  if (fullCluster()) return;
  const group = await env.client.get<PodGroup>(PodGroups, env.namespace, name).catch((e) => {
    if (isNotFound(e)) return undefined;
    throw e;
  });
  if (!group?.metadata?.deletionTimestamp) return;
  await env.client.patch(
    PodGroups,
    env.namespace,
    name,
    { metadata: { finalizers: null } },
    "merge",
  );
}

integrationTest(
  "gang: a MiniCluster deleted and applied again at once gets its PodGroup and Job without a resync; cleanup leaves no PodGroup",
  async (env) => {
    const { client, namespace } = env;
    const cluster = await gangScheduling(env.kubeconfig);
    const ownerOf = (o: { metadata?: { ownerReferences?: { uid: string }[] } }) =>
      o.metadata?.ownerReferences?.[0]?.uid;
    await withOperator(env, async () => {
      const first = await client.create<MiniCluster>(
        MiniClusters,
        miniCluster("again", namespace, { size: 2, gang: {} }),
      );
      await eventually(() => client.get<Job>(Jobs, namespace, "again"), { timeoutMs: 20_000 });
      if (!servesGangs(cluster)) {
        // The PodGroup's row is not active: its watch did not start (nor fail the operator), the
        // Job runs unganged, and deletion ends without one.
        await waitForCondition(env, "again", "GangScheduling", "False", "Unavailable");
        await client.delete(MiniClusters, namespace, "again");
        await eventually(() => gone(env, MiniClusters, "again"), { timeoutMs: 30_000 });
        await gone(env, Jobs, "again");
        return;
      }
      assert.equal(
        ownerOf(await client.get<PodGroup>(PodGroups, namespace, "again")),
        first
          .metadata?.uid,
      );

      await client.delete(MiniClusters, namespace, "again");
      await eventually(() => gone(env, MiniClusters, "again"), { timeoutMs: 30_000 });
      // Cleanup deleted the PodGroup (it may still be Terminating behind its protection finalizer).
      const left = await client.get<PodGroup>(PodGroups, namespace, "again").catch((e) => {
        if (isNotFound(e)) return undefined;
        throw e;
      });
      assert.ok(!left || left.metadata?.deletionTimestamp, "the operator deleted the PodGroup");

      // Applied again at once: the predecessor's PodGroup, while it is still there, holds the name.
      const reapplied = Date.now();
      const second = await client.create<MiniCluster>(
        MiniClusters,
        miniCluster("again", namespace, { size: 3, gang: {} }),
      );
      if (left && !fullCluster()) {
        await waitForCondition(env, "again", "Unappliable", "True", "NameTaken");
        await releaseDeletedPodGroup(env, "again");
      }
      const job = await eventually(async () => {
        const j = await client.get<Job>(Jobs, namespace, "again");
        assert.equal(ownerOf(j), second.metadata?.uid, "the successor's Job");
        return j;
      }, { timeoutMs: 30_000, intervalMs: 200 });
      const waitedMs = Date.now() - reapplied;
      console.log(
        `re-applied MiniCluster: its Job after ${waitedMs} ms (predecessor's PodGroup ${
          left ? "Terminating" : "gone"
        } at the re-apply)`,
      );
      assert.ok(waitedMs < 30_000, "no resync waited for");
      assert.equal(jobPodGroup(job), "again");
      const group = await client.get<PodGroup>(PodGroups, namespace, "again");
      assert.equal(ownerOf(group), second.metadata?.uid, "the successor's PodGroup");
      assert.equal(group.spec?.schedulingPolicy?.gang?.minCount, 3);

      // Cleanup deletes the PodGroup too: none is left once the MiniCluster is gone.
      await client.delete(MiniClusters, namespace, "again");
      await eventually(() => gone(env, MiniClusters, "again"), { timeoutMs: 30_000 });
      await eventually(async () => {
        await releaseDeletedPodGroup(env, "again");
        await gone(env, PodGroups, "again");
      }, { timeoutMs: 30_000, intervalMs: 200 });
    });
  },
  { timeoutMs: 120_000 },
);

integrationTest(
  "gang: a kind the API server does not serve, watched where served, neither fails nor holds up the caches",
  async (env) => {
    // A version of the PodGroup API no Kubernetes serves: the real API server answers 404.
    const unserved = resourceType("scheduling.k8s.io", "v1alpha9", "podgroups", "PodGroup", true);
    const watcher = new Watcher<PodGroup>(env.client, unserved, {
      namespaces: [env.namespace],
      whereServed: { recheckMs: 60_000 },
    });
    watcher.start();
    try {
      await watcher.synced;
      assert.ok(watcher.store.hasSynced);
      assert.deepEqual(watcher.store.list(), []);
    } finally {
      await watcher.stop();
    }
    const strict = new Watcher<PodGroup>(env.client, unserved, { namespaces: [env.namespace] });
    strict.start();
    await assert.rejects(strict.synced, /does not serve podgroups\.scheduling\.k8s\.io/);
    await strict.stop();
  },
);
