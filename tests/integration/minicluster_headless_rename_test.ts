// Renaming the headless Service (spec.network.headlessName) of a running MiniCluster: the Job's
// pods keep their subdomain (immutable in a Job's pod template), so everything the running
// brokers depend on stays as it was — the old headless Service and the old domain in broker.toml —
// and the rename is reported until the MiniCluster is created again.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { ConfigMaps, Jobs, Services } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, integrationTest, type TestEnv } from "../harness.ts";
import {
  exists,
  miniCluster,
  quiescent,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

/** The broker domains (`<subdomain>.<namespace>.svc.cluster.local`) the entrypoint scripts name. */
async function brokerDomains(env: TestEnv, name: string): Promise<string[]> {
  const cm = await env.client.get<ConfigMap>(ConfigMaps, env.namespace, `${name}-entrypoint`);
  const domains = new Set<string>();
  for (const text of Object.values(cm.data ?? {})) {
    for (const m of text.matchAll(/%h\.([a-z0-9.-]+)\.svc\.cluster\.local/g)) domains.add(m[1]);
  }
  return [...domains];
}

integrationTest(
  "minicluster headless rename: the running brokers keep their Service and domain, reported",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async (op) => {
      await client.create(MiniClusters, miniCluster("renamed", namespace));
      await eventually(() => client.get<Job>(Jobs, namespace, "renamed"));
      await waitForCondition(env, "renamed", "Unappliable", "False", "Applied");
      assert.ok(await exists(env, Services, "renamed"));
      assert.deepEqual(await brokerDomains(env, "renamed"), [`renamed.${namespace}`]);

      await client.patch(MiniClusters, namespace, "renamed", {
        spec: { network: { headlessName: "brokers" } },
      }, "merge");
      const c = await waitForCondition(env, "renamed", "Unappliable", "True", "JobFieldsImmutable");
      assert.match(c.message ?? "", /spec\.template\.spec\.subdomain/);
      await quiescent(op);
      const job = await client.get<Job>(Jobs, namespace, "renamed");
      assert.equal(job.spec?.template.spec?.subdomain, "renamed");
      assert.ok(await exists(env, Services, "renamed"), "the brokers' headless Service is kept");
      assert.ok(!(await exists(env, Services, "brokers")), "no Service for a domain no pod is in");
      assert.deepEqual(await brokerDomains(env, "renamed"), [`renamed.${namespace}`]);

      // Back to the Job's subdomain: nothing left to report.
      await client.patch(MiniClusters, namespace, "renamed", {
        spec: { network: { headlessName: null } },
      }, "merge");
      await waitForCondition(env, "renamed", "Unappliable", "False", "Applied");
      assert.ok(await exists(env, Services, "renamed"));
      assert.deepEqual(await brokerDomains(env, "renamed"), [`renamed.${namespace}`]);
    });
  },
  { timeoutMs: 90_000 },
);
