// A write that keeps failing surfaces within one retried reconcile (issue 18, defect 5), on the real
// apiserver behind the fault proxy: every apply of the Job answers 500, as the apiserver answers a
// Job over etcd's size limit ("etcdserver: request is too large"). Before, the controller retried
// such a Job 22 times over 8½ minutes with no status and no Event.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { FaultProxy } from "../faults/proxy.ts";
import { eventually, integrationTest } from "../harness.ts";
import { eventsFor, miniCluster, waitForCondition, withOperator } from "./minicluster_operator.ts";

integrationTest(
  "failing write: a Job the API keeps refusing with 500 is reported, then recovers",
  async (env) => {
    const proxy = await FaultProxy.start({ kubeconfig: env.kubeconfig });
    try {
      let failing = true;
      proxy.rules.push((req) =>
        failing && req.write && req.resource === "jobs" ? { kind: "status", code: 500 } : undefined
      );
      const proxied = { ...env, kubeconfig: await proxy.writeKubeconfig() };
      await withOperator(proxied, async () => {
        await env.client.create(MiniClusters, miniCluster("big", env.namespace, { size: 2 }));
        const c = await waitForCondition(env, "big", "Unappliable", "True", "WriteFailing", 15_000);
        assert.match(c.message!, /^Job big: 500 .*injected 500 \(retrying with backoff\)/);
        // The Event goes out beside the status write, so it may land just after the condition.
        await eventually(async () =>
          assert.ok((await eventsFor(env, "big")).some((e) => e.reason === "WriteFailing"))
        );

        failing = false;
        await eventually(() => env.client.get<Job>(Jobs, env.namespace, "big"), {
          timeoutMs: 40_000,
        });
        await waitForCondition(env, "big", "Unappliable", "False", undefined, 40_000);
      });
    } finally {
      await proxy.close();
    }
  },
  { timeoutMs: 120_000 },
);
