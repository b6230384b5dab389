// A ganged MiniCluster on real nodes (needs Kubernetes 1.37 with gang scheduling on, see
// testing/gang_cluster.ts; on any other cluster the scenario fails saying so): its pods name its
// PodGroup, the scheduler placed that gang, and the two brokers run real Flux — read from the lead
// broker's log, the Job and the PodGroup, never from the operator's view.
import assert from "node:assert/strict";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { gangScheduling, gangsNeeded, servesGangs } from "../../testing/gang_cluster.ts";
import { eventually } from "../harness.ts";
import {
  assertFluxRanEveryBroker,
  kubectl,
  REAL_NAMESPACE,
  realMiniCluster,
  realTest,
} from "./env.ts";

realTest("real: a ganged size-2 MiniCluster is placed as one gang and runs Flux", async (env) => {
  const cluster = await gangScheduling(env.kubeconfig);
  if (!servesGangs(cluster)) throw new Error(gangsNeeded(cluster));
  const name = "gang";
  await env.apply(realMiniCluster(name, { size: 2, gang: {} }, {
    launcher: true,
    commands: { script: ["flux resource list", "flux run -N2 hostname"].join("\n") },
  }));
  const succeeded = await eventually(async () => {
    const mc = await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name);
    const c = (mc.status?.conditions as Condition[] | undefined)?.find((x) =>
      x.type === "Succeeded"
    );
    if (c?.status !== "True") throw new Error(`${name}: Succeeded is ${JSON.stringify(c)}`);
    return mc;
  }, { timeoutMs: 180_000, intervalMs: 1000 });

  // The Job's pods named the MiniCluster's PodGroup, and the scheduler placed it.
  const job = JSON.parse(await kubectl(["-n", REAL_NAMESPACE, "get", "job", name, "-o", "json"]));
  assert.equal(
    job.spec.template.spec.schedulingGroup?.podGroupName,
    name,
    JSON.stringify(job.spec),
  );
  const group = JSON.parse(
    await kubectl(["-n", REAL_NAMESPACE, "get", "podgroups.scheduling.k8s.io", name, "-o", "json"]),
  );
  assert.equal(group.spec.schedulingPolicy.gang.minCount, 2);
  const placed = group.status?.conditions?.find((c: Condition) =>
    c.type === "PodGroupInitiallyScheduled"
  );
  assert.equal(placed?.status, "True", JSON.stringify(group.status));
  const gang = (succeeded.status?.conditions as Condition[]).find((c) =>
    c.type === "GangScheduling"
  );
  assert.equal(gang?.status, "True", JSON.stringify(gang));

  // Real Flux: both brokers in the instance, the job run once on each rank.
  await assertFluxRanEveryBroker(env, name, 2);
});
