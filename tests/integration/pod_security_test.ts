/**
 * Creating a MiniCluster is creating pods, and Pod Security Admission (built into kube-apiserver,
 * switched on per namespace by its `pod-security.kubernetes.io/enforce` label) bounds what those
 * pods may do. A privileged MiniCluster in a `baseline` namespace never hangs silently: the
 * services pod's 403 is the Unappliable condition, and (with a controller manager) the Job's
 * refused pods are the Ready condition's reason FailedCreate. The operator's own --pod-security
 * refuses such a MiniCluster before creating anything (SpecInvalid/PodSecurity).
 */
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { Jobs, Namespaces, Pods } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, fullCluster, integrationTest, type TestEnv } from "../harness.ts";
import { eventsFor, miniCluster, waitForCondition, withOperator } from "./minicluster_operator.ts";

const PRIVILEGED = {
  size: 2,
  containers: [{
    image: "ghcr.io/rse-ops/accounting:app-latest",
    command: "hostname",
    securityContext: { privileged: true },
    volumes: { root: { path: "/host", hostPath: "/" } },
  }],
  services: [{ name: "db", image: "mongo", securityContext: { privileged: true } }],
  pod: { hostPID: true },
};

async function enforce(env: TestEnv, level: string): Promise<void> {
  await env.client.patch(Namespaces, undefined, env.namespace, {
    metadata: { labels: { "pod-security.kubernetes.io/enforce": level } },
  }, "merge");
}

integrationTest(
  "pod security: PSA baseline refuses a privileged MiniCluster's pods, and the conditions say so",
  async (env) => {
    await enforce(env, "baseline");
    await withOperator(env, async () => {
      await env.client.create(MiniClusters, miniCluster("priv", env.namespace, PRIVILEGED));
      // The services pod is created by the operator: PSA's 403 is the API's message.
      const unappliable = await waitForCondition(env, "priv", "Unappliable", "True", "ApiError");
      assert.match(unappliable.message!, /Pod priv-services/);
      assert.match(unappliable.message!, /violates PodSecurity "baseline:latest"/);
      assert.match(unappliable.message!, /privileged/);
      await assert.rejects(
        env.client.get<Pod>(Pods, env.namespace, "priv-services"),
        (e) => isNotFound(e),
      );
      if (!fullCluster()) return;
      // The Job's pods are created by the Job controller: its FailedCreate is the Ready reason.
      const ready = await waitForCondition(env, "priv", "Ready", "False", "FailedCreate", 45_000);
      assert.match(ready.message!, /^0\/2 pods ready; the Job cannot create pods: FailedCreate: /);
      assert.match(ready.message!, /violates PodSecurity "baseline:latest"/);
      await eventually(async () =>
        assert.ok((await eventsFor(env, "priv")).some((e) => e.reason === "FailedCreate"))
      );
    });
  },
  { timeoutMs: 90_000 },
);

integrationTest(
  "pod security: --pod-security=baseline refuses the MiniCluster before creating anything",
  async (env) => {
    await withOperator(env, async () => {
      await env.client.create(MiniClusters, miniCluster("priv", env.namespace, PRIVILEGED));
      const invalid = await waitForCondition(env, "priv", "SpecInvalid", "True", "PodSecurity");
      assert.match(invalid.message!, /"baseline" Pod Security Standard \(--pod-security\)/);
      assert.match(invalid.message!, /pods: hostPID is true/);
      assert.match(invalid.message!, /services pod: container "db" is privileged/);
      await assert.rejects(
        env.client.get<Job>(Jobs, env.namespace, "priv"),
        (e) => isNotFound(e),
        "no Job",
      );
      // A plain MiniCluster is built as usual under the same policy.
      await env.client.create(MiniClusters, miniCluster("plain", env.namespace));
      await waitForCondition(env, "plain", "SpecInvalid", "False");
      assert.ok(await env.client.get<Job>(Jobs, env.namespace, "plain"));
    }, { podSecurity: "baseline" });
  },
);
