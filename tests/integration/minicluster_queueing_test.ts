// Queueing and the Job's lifecycle on the real apiserver (no Job controller here: the tests play
// the parts of a queue controller and of the Job controller themselves):
// - spec.suspend suspends and resumes the Job, with a Suspended condition and Events;
// - a queue controller of its own label (the way Kueue works: suspend at creation, admit later with
//   node selectors injected) is never fought by the operator, not even while scaling. Kueue's own
//   label is left to the real Kueue, which the suite's cluster runs (tests/e2e/kueue_test.ts);
// - spec.ttlSecondsAfterFinished deletes the MiniCluster once its Job has finished that long.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { MiniClusters } from "../../api/resource.ts";
import { FIELD_MANAGER } from "../../controllers/minicluster/children/names.ts";
import { eventually, fullCluster, integrationTest, kubectl, type TestEnv } from "../harness.ts";
import {
  eventsFor,
  getMiniCluster,
  miniCluster,
  quiescent,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

const QUEUE = "kueue-test";

const getJob = (env: TestEnv, name: string) => env.client.get<Job>(Jobs, env.namespace, name);

/** Sets (or, with null, clears) spec.suspend of the MiniCluster `name`. */
const setSuspend = (env: TestEnv, name: string, suspend: boolean | null) =>
  env.client.patch(MiniClusters, env.namespace, name, { spec: { suspend } }, "merge");

/** Managers that own `spec.suspend` of the Job. */
function suspendOwners(job: Job): string[] {
  return (job.metadata?.managedFields ?? [])
    .filter((m) => JSON.stringify(m.fieldsV1 ?? {}).includes('"f:suspend"'))
    .map((m) => m.manager ?? "");
}

integrationTest("minicluster queueing: spec.suspend suspends and resumes the Job", async (env) => {
  await withOperator(env, async () => {
    // Suspended from the start: no Job until resumed (a default queue would admit it at once).
    await env.client.create(MiniClusters, miniCluster("paused", env.namespace, { suspend: true }));
    const before = await waitForCondition(env, "paused", "Suspended", "True", "Suspended");
    assert.match(before.message ?? "", /the Job is created when it is false/);
    await assert.rejects(getJob(env, "paused"), /not ?found/i);
    await setSuspend(env, "paused", false);
    await eventually(async () =>
      assert.notEqual((await getJob(env, "paused")).spec?.suspend, true)
    );
    await setSuspend(env, "paused", true);
    await eventually(async () => assert.equal((await getJob(env, "paused")).spec?.suspend, true));
    const c = await waitForCondition(env, "paused", "Suspended", "True", "Suspended");
    assert.match(c.message ?? "", /spec\.suspend is true/);
    await waitForCondition(env, "paused", "Ready", "False", "Suspended");
    assert.deepEqual(suspendOwners(await getJob(env, "paused")), [FIELD_MANAGER]);

    await setSuspend(env, "paused", false);
    await eventually(async () => assert.equal((await getJob(env, "paused")).spec?.suspend, false));
    await waitForCondition(env, "paused", "Suspended", "False", "NotSuspended");
    // Events go out after the status write, so they may land just after the condition shows.
    await eventually(async () => {
      const events = await eventsFor(env, "paused");
      assert.ok(events.some((e) => e.reason === "Suspended" && e.type === "Normal"));
      assert.ok(events.some((e) => e.reason === "NotSuspended"));
    });

    // Suspending again (true → unset → true) works the same way.
    await setSuspend(env, "paused", true);
    await eventually(async () => assert.equal((await getJob(env, "paused")).spec?.suspend, true));
    await setSuspend(env, "paused", null);
    await eventually(async () => assert.equal((await getJob(env, "paused")).spec?.suspend, false));
  });
}, { timeoutMs: 90_000 });

integrationTest(
  "minicluster queueing: a queue controller suspends and admits, never fought",
  async (env) => {
    await withOperator(env, async (op) => {
      await env.client.create(
        MiniClusters,
        miniCluster("queued", env.namespace, {
          size: 2,
          maxSize: 4,
          jobLabels: { "queue.example.com/name": "user-queue" },
          jobAnnotations: { "queue.example.com/elastic": "true" },
        }),
      );
      // A queue controller suspends a queued Job as it is created (Kueue: its webhook); here as
      // soon as it exists.
      const created = await eventually(() => getJob(env, "queued"));
      assert.equal(created.metadata?.annotations?.["queue.example.com/elastic"], "true");
      assert.deepEqual(suspendOwners(created), [], "the operator does not own spec.suspend");
      await env.client.patch(Jobs, env.namespace, "queued", { spec: { suspend: true } }, "merge", {
        fieldManager: QUEUE,
      });
      const waiting = await waitForCondition(
        env,
        "queued",
        "Suspended",
        "True",
        "WaitingForAdmission",
      );
      assert.match(
        waiting.message ?? "",
        /waiting for admission: the Job was suspended by a queue controller/,
      );
      await waitForCondition(env, "queued", "Ready", "False", "WaitingForAdmission");

      // The operator goes on managing the Job while it is queued (scaling writes the Job) without
      // touching its suspension.
      await kubectl(env, "scale", "minicluster/queued", "--replicas=3");
      await eventually(async () =>
        assert.equal((await getJob(env, "queued")).spec?.parallelism, 3)
      );
      await quiescent(op);
      const held = await getJob(env, "queued");
      assert.equal(held.spec?.suspend, true, "still held by the queue");
      assert.deepEqual(suspendOwners(held), [QUEUE]);

      // As Kueue does when it stops a Job: clear status.startTime, which the Job controller of a
      // full cluster set if it started the Job before the queue suspended it; the apiserver lets
      // a suspended Job's scheduling directives change only while startTime is unset.
      await eventually(async () => {
        if (!(await getJob(env, "queued")).status?.startTime) return;
        await env.client.patch(
          Jobs,
          env.namespace,
          "queued",
          { status: { startTime: null } },
          "merge",
          { subresource: "status", fieldManager: QUEUE },
        );
        throw new Error("the Job had a startTime; cleared it");
      }, { timeoutMs: 30_000, intervalMs: 500 });

      // Admission: node selectors injected into the template and the Job resumed, in one update.
      await env.client.patch(
        Jobs,
        env.namespace,
        "queued",
        {
          spec: {
            suspend: false,
            template: { spec: { nodeSelector: { "cloud.example.com/flavor": "hpc" } } },
          },
        },
        "merge",
        { fieldManager: QUEUE },
      );
      await waitForCondition(env, "queued", "Suspended", "False", "NotSuspended");
      await quiescent(op);
      const admitted = await getJob(env, "queued");
      assert.equal(admitted.spec?.suspend, false);
      assert.deepEqual(admitted.spec?.template.spec?.nodeSelector, {
        "cloud.example.com/flavor": "hpc",
      });
      await waitForCondition(env, "queued", "Unappliable", "False", "Applied");

      // Kueue may take the Job back (preemption): the operator leaves it suspended again.
      await env.client.patch(Jobs, env.namespace, "queued", { spec: { suspend: true } }, "merge", {
        fieldManager: QUEUE,
      });
      await waitForCondition(env, "queued", "Suspended", "True", "WaitingForAdmission");
      await quiescent(op);
      assert.equal((await getJob(env, "queued")).spec?.suspend, true);
    });
  },
  { timeoutMs: 90_000 },
);

integrationTest(
  "minicluster queueing: ttlSecondsAfterFinished deletes the finished MiniCluster",
  async (env) => {
    await withOperator(env, async () => {
      await env.client.create(
        MiniClusters,
        miniCluster("short-lived", env.namespace, { size: 1, ttlSecondsAfterFinished: 5 }),
      );
      await eventually(() => getJob(env, "short-lived"));
      // On a full cluster the Job controller and KWOK finish the Job by themselves (the pod
      // completes after 1 s); on a bare apiserver the test plays the Job controller's part.
      if (fullCluster()) {
        await eventually(
          async () => assert.ok(finishedAt(await getJob(env, "short-lived")), "not finished yet"),
          { timeoutMs: 60_000, intervalMs: 250 },
        );
      } else {
        await new Promise((r) => setTimeout(r, 3_000));
        // Still there while the Job runs.
        await getMiniCluster(env, "short-lived");
        const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
        const started = new Date(Date.now() - 10_000).toISOString().replace(/\.\d{3}Z$/, "Z");
        await env.client.patch(
          Jobs,
          env.namespace,
          "short-lived",
          {
            status: {
              startTime: started,
              completionTime: now,
              succeeded: 1,
              completedIndexes: "0",
              conditions: [
                condition("SuccessCriteriaMet", now),
                condition("Complete", now),
              ],
            },
          },
          "merge",
          { subresource: "status" },
        );
      }
      const finished = finishedAt(await getJob(env, "short-lived"));
      assert.ok(finished, "the Job finished");
      await eventually(async () => {
        try {
          await getMiniCluster(env, "short-lived");
        } catch (e) {
          if (isNotFound(e)) return;
          throw e;
        }
        throw new Error("the MiniCluster is still there");
      }, { timeoutMs: 30_000, intervalMs: 200 });
      // Condition times have a resolution of one second.
      const after = Date.now() - finished.getTime();
      assert.ok(after >= 4_000, `deleted ${after} ms after the Job finished, not before its TTL`);
      await eventually(async () => {
        const events = await eventsFor(env, "short-lived");
        assert.ok(events.some((e) => e.reason === "TTLExpired"));
      });
    });
  },
  { timeoutMs: 90_000 },
);

/** When the Job completed or failed, from its condition (what the operator counts from). */
function finishedAt(job: Job): Date | undefined {
  const done = job.status?.conditions?.find((c) =>
    (c.type === "Complete" || c.type === "Failed") && c.status === "True"
  );
  return done?.lastTransitionTime ? new Date(done.lastTransitionTime) : undefined;
}

function condition(type: string, at: string) {
  return {
    type,
    status: "True",
    reason: "SuccessPolicy",
    message: "",
    lastProbeTime: at,
    lastTransitionTime: at,
  };
}
