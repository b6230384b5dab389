// A hostile environment (issue 18, defect 1): a control plane of its own with the AlwaysPullImages
// admission plugin, which rewrites every container's imagePullPolicy, and a person editing one
// label of the services pod. Neither may make the operator re-create the pod; before the fix it did
// so about every second, forever.
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { isAlreadyExists } from "../../runtime/client/errors.ts";
import { Namespaces, Pods, ServiceAccounts } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { installCrds } from "../../testing/crds.ts";
import { startPrivateCluster } from "../../testing/private_cluster.ts";
import { eventually, type TestEnv } from "../harness.ts";
import { miniCluster, waitForCondition, withOperator } from "./minicluster_operator.ts";

const POD = "hostile-services";

Deno.test({
  name:
    "hostile admission: AlwaysPullImages and a hand-edited label never re-create the services pod",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kubeconfig = await startPrivateCluster({
      prefix: "minicluster-hostile-",
      controlPlaneOnly: true,
      apiserverArgs: ["--enable-admission-plugins=AlwaysPullImages"],
    });
    await installCrds(kubeconfig);
    const client = await KubeClient.fromKubeconfig(kubeconfig);
    const namespace = "hostile";
    try {
      await client.create(Namespaces, { metadata: { name: namespace } });
      await client.create(ServiceAccounts, { metadata: { name: "default", namespace } })
        .catch((e) => {
          if (!isAlreadyExists(e)) throw e;
        });
      const env: TestEnv = { client, namespace, kubeconfig };
      await withOperator(env, async (op) => {
        await client.create(
          MiniClusters,
          miniCluster("hostile", namespace, {
            services: [{ name: "api", image: "nginx:1", ports: [80] }],
          }),
        );
        const first = await eventually(() => client.get<Pod>(Pods, namespace, POD), {
          timeoutMs: 20_000,
        });
        // The plugin is on: the pod was admitted with another pull policy than the operator's.
        assert.ok(first.spec!.containers.every((c) => c.imagePullPolicy === "Always"));
        await waitForCondition(env, "hostile", "Unappliable", "False");

        // Someone edits one of the operator's labels: it is put back, on the same pod.
        const label = "app.kubernetes.io/name";
        const wanted = first.metadata!.labels![label];
        assert.ok(wanted, `the services pod has ${label}`);
        await client.patch(
          Pods,
          namespace,
          POD,
          { metadata: { labels: { [label]: "x" } } },
          "merge",
        );
        await eventually(async () => {
          const pod = await client.get<Pod>(Pods, namespace, POD);
          assert.equal(pod.metadata?.labels?.[label], wanted);
        });

        // Long enough for several re-creations at the old pace (one a second).
        await new Promise((r) => setTimeout(r, 6_000));
        const deletes = op.writes().filter((w) => w.verb === "delete" && w.resource === "pods");
        assert.equal(deletes.length, 0, `services pod re-created ${deletes.length} times`);
        const pod = await client.get<Pod>(Pods, namespace, POD);
        assert.equal(pod.metadata?.uid, first.metadata?.uid);
      });
    } finally {
      client.close();
    }
  },
});
