// Resuming a MiniCluster whose running Job cannot take its pod template: the template change is
// reported (JobFieldsImmutable) and the Job still follows spec.suspend both ways, whichever write
// path (apply or the patch of what a running Job accepts) suspended it, also after the operator
// restarted; "waiting for admission" is never said of a Job only the operator suspended.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, integrationTest, type TestEnv } from "../harness.ts";
import {
  condition,
  miniCluster,
  quiescent,
  startOperator,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

const getJob = (env: TestEnv, name: string) => env.client.get<Job>(Jobs, env.namespace, name);

const IMAGE = "ghcr.io/rse-ops/accounting:app-latest";

const withImage = (image: string) => ({
  containers: [{ image, command: "hostname" }],
});

async function patchSpec(env: TestEnv, name: string, spec: Record<string, unknown>) {
  await env.client.patch(MiniClusters, env.namespace, name, { spec }, "merge");
}

/** The Job runs (not suspended) and the status says so, Ready too. */
async function resumed(env: TestEnv, name: string) {
  await eventually(async () => assert.equal((await getJob(env, name)).spec?.suspend, false));
  await waitForCondition(env, name, "Suspended", "False", "NotSuspended");
  const ready = await condition(env, name, "Ready");
  assert.ok(!["Suspended", "WaitingForAdmission"].includes(ready.reason ?? ""), ready.reason);
}

integrationTest(
  "minicluster resume: suspend, change the pod template, resume: the Job resumes",
  async (env) => {
    await withOperator(env, async (op) => {
      await env.client.create(MiniClusters, miniCluster("later", env.namespace));
      await eventually(async () => await getJob(env, "later"));
      await patchSpec(env, "later", { suspend: true });
      await eventually(async () => assert.equal((await getJob(env, "later")).spec?.suspend, true));
      await waitForCondition(env, "later", "Suspended", "True", "Suspended");

      await patchSpec(env, "later", withImage(`${IMAGE}-2`));
      await waitForCondition(env, "later", "Unappliable", "True", "JobFieldsImmutable");
      await patchSpec(env, "later", { suspend: false });
      await resumed(env, "later");
      // The template change is still reported, and the Job stays resumed.
      await waitForCondition(env, "later", "Unappliable", "True", "JobFieldsImmutable");
      await quiescent(op);
      assert.equal((await getJob(env, "later")).spec?.suspend, false);

      // Suspending and resuming again still works while the template differs.
      await patchSpec(env, "later", { suspend: true });
      await eventually(async () => assert.equal((await getJob(env, "later")).spec?.suspend, true));
      await waitForCondition(env, "later", "Suspended", "True", "Suspended");
      await patchSpec(env, "later", { suspend: null });
      await resumed(env, "later");
    });
  },
  { timeoutMs: 120_000 },
);

integrationTest(
  "minicluster resume: change the template, suspend, revert, restart the operator, resume",
  async (env) => {
    await withOperator(env, async () => {
      await env.client.create(MiniClusters, miniCluster("back", env.namespace));
      await eventually(() => getJob(env, "back"));
      await waitForCondition(env, "back", "Unappliable", "False", "Applied");

      await patchSpec(env, "back", withImage(`${IMAGE}-2`));
      await waitForCondition(env, "back", "Unappliable", "True", "JobFieldsImmutable");
      await patchSpec(env, "back", { suspend: true });
      await eventually(async () => assert.equal((await getJob(env, "back")).spec?.suspend, true));
      await waitForCondition(env, "back", "Suspended", "True", "Suspended");
      await patchSpec(env, "back", withImage(IMAGE));
      await waitForCondition(env, "back", "Unappliable", "False", "Applied");
    });
    // A new operator, with empty caches and nothing remembered, takes over.
    const op = await startOperator(env);
    try {
      await op.started;
      await patchSpec(env, "back", { suspend: false });
      await resumed(env, "back");
      await waitForCondition(env, "back", "Unappliable", "False", "Applied");
      await quiescent(op);
      assert.equal((await getJob(env, "back")).spec?.suspend, false);
    } finally {
      await op.stop();
    }
  },
  { timeoutMs: 120_000 },
);
