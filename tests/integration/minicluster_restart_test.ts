// The operator dies right after its k-th API write (every later request fails, then it is
// stopped), and a new operator with a fresh client and empty caches takes over: it reaches the
// same end state, with the same CURVE certificate and the same workspace.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { ConfigMaps, Jobs, Secrets, Services } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import { MINICLUSTER_LABEL } from "../../controllers/minicluster/children/names.ts";
import { eventually, fullCluster, integrationTest } from "../harness.ts";
import {
  miniCluster,
  startOperator,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

async function maybe<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

for (const killAfter of [1, 2, 3, 5]) {
  integrationTest(
    `minicluster restart: killed after write ${killAfter}, same end state`,
    async (env) => {
      const { client, namespace } = env;
      const name = `r${killAfter}`;
      const first = await startOperator(env, { killAfterWrites: killAfter });
      let secretBefore: Secret | undefined;
      let workspaceBefore: MiniClusterWorkspace | undefined;
      try {
        await first.started;
        await client.create(
          MiniClusters,
          miniCluster(name, namespace, {
            size: 2,
            maxSize: 3,
            pod: { annotations: { "kwok.x-k8s.io/keep-running": "true" } },
          }),
        );
        await eventually(() => {
          if (first.writes().filter((w) => w.code < 300).length < killAfter) {
            throw new Error("the first operator has not written enough yet");
          }
        }, { timeoutMs: 20_000 });
        secretBefore = await maybe(() =>
          client.get<Secret>(Secrets, namespace, `${name}-curve-cert`)
        );
        workspaceBefore = await maybe(() =>
          client.get<MiniClusterWorkspace>(MiniClusterWorkspaces, namespace, name)
        );
      } finally {
        await first.stop();
      }

      await withOperator(env, async () => {
        const job = await eventually(() => client.get<Job>(Jobs, namespace, name), {
          timeoutMs: 20_000,
        });
        assert.equal(job.spec?.parallelism, 2);
        await eventually(() => client.get(Services, namespace, name));
        await eventually(() => client.get(ConfigMaps, namespace, `${name}-entrypoint`));
        const secret = await client.get<Secret>(Secrets, namespace, `${name}-curve-cert`);
        if (secretBefore) {
          assert.equal(
            secret.metadata?.uid,
            secretBefore.metadata?.uid,
            "the Secret was not replaced",
          );
          assert.deepEqual(secret.data, secretBefore.data, "the certificate is unchanged");
        }
        const ws = await client.get<MiniClusterWorkspace>(MiniClusterWorkspaces, namespace, name);
        if (workspaceBefore) assert.deepEqual(ws.spec, workspaceBefore.spec);
        assert.equal(ws.spec.maxSize, 3);

        // Exactly one of each child.
        const secrets = await client.list(Secrets, {
          namespace,
          labelSelector: `${MINICLUSTER_LABEL}=${name}`,
        });
        assert.equal(secrets.items.length, 1);
        const jobs = await client.list(Jobs, {
          namespace,
          labelSelector: `${MINICLUSTER_LABEL}=${name}`,
        });
        assert.equal(jobs.items.length, 1);

        if (fullCluster()) await waitForCondition(env, name, "Ready", "True", "PodsReady", 60_000);
        else await waitForCondition(env, name, "Ready", "False", "PodsNotReady");
      });
    },
    { timeoutMs: 120_000 },
  );
}
