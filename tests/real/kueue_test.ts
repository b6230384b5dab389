// A MiniCluster queued by the real Kueue on real nodes: created suspended by Kueue's webhook,
// admitted into the scenario's ClusterQueue, and its two brokers run real Flux — read from the
// lead broker's log, the Job's Events and Kueue's Workload, never from the operator's view.
import assert from "node:assert/strict";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { REAL_NODE_LABEL } from "../../hack/cluster/real_node_config.ts";
import { eventually } from "../harness.ts";
import {
  kueueAvailable,
  makeQueues,
  QUEUED,
  workloadCondition,
  workloadsOf,
} from "../e2e/kueue_env.ts";
import {
  assertFluxRanEveryBroker,
  kubectl,
  REAL_NAMESPACE,
  realMiniCluster,
  realTest,
} from "./env.ts";

realTest(
  "real: a MiniCluster queued by Kueue is admitted and its brokers run Flux",
  async (env) => {
    const dropQueues = await makeQueues(env, {
      cpu: 1,
      nodeLabels: { [REAL_NODE_LABEL]: "true" },
    });
    try {
      const name = "queued";
      await env.apply(realMiniCluster(name, { size: 2, jobLabels: QUEUED }, {
        launcher: true,
        commands: { script: ["flux resource list", "flux run -N2 hostname"].join("\n") },
        resources: { requests: { cpu: "100m" } },
      }));
      await eventually(async () => {
        const mc = await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name);
        const c = (mc.status?.conditions as Condition[] | undefined)?.find((x) =>
          x.type === "Succeeded"
        );
        if (c?.status !== "True") throw new Error(`${name}: Succeeded is ${JSON.stringify(c)}`);
      }, { timeoutMs: 180_000, intervalMs: 1000 });

      // Kueue created its Workload for the Job and started the Job on admission.
      const job = JSON.parse(
        await kubectl(["-n", REAL_NAMESPACE, "get", "job", name, "-o", "json"]),
      );
      const [wl] = await workloadsOf(env, job.metadata.uid);
      assert.ok(wl, "Kueue made a Workload for the Job");
      assert.ok(
        workloadCondition(wl, "QuotaReserved") ?? workloadCondition(wl, "Finished"),
        JSON.stringify(wl.status),
      );
      const reasons = await kubectl([
        "-n",
        REAL_NAMESPACE,
        "get",
        "events",
        "--field-selector",
        `involvedObject.kind=Job,involvedObject.name=${name}`,
        "-o",
        "jsonpath={range .items[*]}{.reason}{'\\n'}{end}",
      ]);
      assert.match(reasons, /^CreatedWorkload$/m, reasons);
      assert.match(reasons, /^Started$/m, reasons);

      // Real Flux: both brokers in the instance, the job run once on each rank.
      await assertFluxRanEveryBroker(env, name, 2);
    } finally {
      await dropQueues();
    }
  },
  { ignore: !kueueAvailable() },
);
