// A MiniCluster labelled for a Kueue queue on an API server that does not serve Kueue's Workloads
// (Kueue uninstalled, older than v0.15, or never installed): spec.suspend must still suspend its
// Job, and the status says why the operator did it itself. Runs a private control plane of its
// own, because the suite's cluster has the real Kueue.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { MiniClusters } from "../../api/resource.ts";
import { KUEUE_QUEUE_LABEL } from "../../controllers/minicluster/children/queue.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { Jobs, Namespaces, ServiceAccounts } from "../../runtime/client/resources.ts";
import { installCrds } from "../../testing/crds.ts";
import { startPrivateCluster } from "../../testing/private_cluster.ts";
import { eventually, type TestEnv } from "../harness.ts";
import { miniCluster, waitForCondition, withOperator } from "./minicluster_operator.ts";

Deno.test({
  name: "kueue absent: spec.suspend of a MiniCluster labelled for a queue suspends its Job",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kubeconfig = await startPrivateCluster({
      prefix: "minicluster-kueue-absent-",
      controlPlaneOnly: true,
    });
    await installCrds(kubeconfig);
    const client = await KubeClient.fromKubeconfig(kubeconfig);
    const namespace = "kueue-absent";
    try {
      await client.create(Namespaces, { metadata: { name: namespace } });
      await client.create(ServiceAccounts, { metadata: { name: "default", namespace } });
      const env: TestEnv = { client, namespace, kubeconfig };
      const getJob = () => client.get<Job>(Jobs, namespace, "labelled");
      await withOperator(env, async () => {
        await client.create(
          MiniClusters,
          miniCluster("labelled", namespace, { jobLabels: { [KUEUE_QUEUE_LABEL]: "lq" } }),
        );
        await eventually(async () => assert.ok(await getJob()));
        await client.patch(
          MiniClusters,
          namespace,
          "labelled",
          { spec: { suspend: true } },
          "merge",
        );
        await eventually(async () => assert.equal((await getJob()).spec?.suspend, true));
        const c = await waitForCondition(env, "labelled", "Suspended", "True", "Suspended");
        assert.match(c.message ?? "", /does not serve Kueue's Workloads/);

        await client.patch(
          MiniClusters,
          namespace,
          "labelled",
          { spec: { suspend: false } },
          "merge",
        );
        await eventually(async () => assert.equal((await getJob()).spec?.suspend, false));
        await waitForCondition(env, "labelled", "Suspended", "False", "NotSuspended");
      });
    } finally {
      client.close();
    }
  },
});
