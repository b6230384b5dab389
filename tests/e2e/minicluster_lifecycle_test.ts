// The MiniCluster lifecycle end to end on the KWOK cluster: the operator is a separate process,
// the Job controller, the scheduler and (simulated) kubelets are real. Every scenario runs twice:
// once undisturbed, once with the operator SIGKILLed in the middle and started again — the end
// state must be the same.
import assert from "node:assert/strict";
import { kubectl } from "../harness.ts";
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { Nodes } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import {
  conditionOf,
  type E2EEnv,
  e2eTest,
  eventsOf,
  eventually,
  getMiniCluster,
  jobOf,
  KEEP_RUNNING,
  leftovers,
  miniCluster,
  podsOf,
  waitForCondition,
  waitForRunningPods,
} from "./env.ts";
import type { OperatorProcess } from "../../testing/operator_process.ts";

type Disruption = "undisturbed" | "SIGKILL";
const DISRUPTIONS: Disruption[] = ["undisturbed", "SIGKILL"];

/** With SIGKILL: kills the operator and starts a fresh one; otherwise returns it unchanged. */
async function maybeKill(
  env: E2EEnv,
  op: OperatorProcess,
  d: Disruption,
): Promise<OperatorProcess> {
  return d === "undisturbed" ? op : await env.restartOperator(op);
}

/** `kubectl get minicluster <name> -o wide` as { NAME, SIZE, READY, STATUS, MAX, AGE }. */
async function printerColumns(env: E2EEnv, name: string): Promise<Record<string, string>> {
  const out = (await kubectl(env, "get", "minicluster", name, "-o", "wide")).trim().split("\n");
  const header = out[0].trim().split(/\s+/);
  const row = out[1].trim().split(/\s+/);
  return Object.fromEntries(header.map((h, i) => [h, row[i]]));
}

/** Waits for the Job's parallelism (and completions) to be `n`. */
async function waitForJobSize(env: E2EEnv, name: string, n: number): Promise<void> {
  await eventually(async () => {
    const job = await jobOf(env, name);
    assert.equal(job.spec?.parallelism, n, "Job parallelism");
    assert.equal(job.spec?.completions, n, "Job completions");
  }, { timeoutMs: 30_000, intervalMs: 250 });
}

async function waitForGone(env: E2EEnv, name: string, timeoutMs = 45_000): Promise<void> {
  await eventually(async () => {
    try {
      await getMiniCluster(env, name);
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    throw new Error(`MiniCluster ${name} still exists`);
  }, { timeoutMs, intervalMs: 250 });
}

async function waitForNoLeftovers(env: E2EEnv): Promise<void> {
  await eventually(async () => {
    assert.deepEqual(await leftovers(env), [], "objects left in the namespace");
  }, { timeoutMs: 45_000, intervalMs: 500 });
}

for (const d of DISRUPTIONS) {
  e2eTest(
    `e2e create: pods Running on KWOK nodes, Ready, printer columns, events (${d})`,
    async (env) => {
      let op = await env.startOperator();
      await env.client.create(
        MiniClusters,
        miniCluster("hello", env.namespace, { size: 4, pod: { annotations: KEEP_RUNNING } }),
      );
      if (d === "SIGKILL") {
        // Kill it while it builds: once the first child exists, before the cluster is Ready.
        await eventually(() => jobOf(env, "hello"), { timeoutMs: 20_000, intervalMs: 50 });
      }
      op = await maybeKill(env, op, d);

      const pods = await waitForRunningPods(env, "hello", 4);
      assert.deepEqual(
        pods.map((p) => p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"]).sort(),
        ["0", "1", "2", "3"],
      );
      const mc = await waitForCondition(env, "hello", "Ready", {
        status: "True",
        reason: "PodsReady",
      });
      const status = mc.status as { readyPods?: number; size?: number; maximumSize?: number };
      assert.equal(status.readyPods, 4);
      assert.equal(status.size, 4);
      assert.equal(status.maximumSize, 4);
      assert.ok(mc.metadata?.finalizers?.includes("flux-framework.org/cleanup"), "finalizer");

      const columns = await printerColumns(env, "hello");
      assert.equal(columns.NAME, "hello");
      assert.equal(columns.SIZE, "4");
      assert.equal(columns.READY, "4");
      assert.equal(columns.STATUS, "PodsReady");
      assert.equal(columns.MAX, "4");
      assert.match(columns.AGE, /^\d+s$/);

      // One Event per condition change: a new MiniCluster that becomes Ready tells exactly that.
      // The Event goes out after the status write, so it may land just after the condition shows.
      const events = await eventually(async () => {
        const events = await eventsOf(env, "hello");
        const reasons = events.map((e) => e.reason);
        if (d === "undisturbed") assert.deepEqual(reasons, ["PodsReady"]);
        else {
          // A kill between the status write and its Event may lose the Event, never duplicate it.
          assert.ok(reasons.length <= 1 && reasons.every((r) => r === "PodsReady"), reasons.join());
        }
        return events;
      });
      assert.ok(events.every((e) => e.type === "Normal" && (e.count ?? 1) === 1));
      await op.stop();
    },
  );

  e2eTest(`e2e scale: pods follow within bounds, clamped beyond maxSize (${d})`, async (env) => {
    let op = await env.startOperator();
    await env.client.create(
      MiniClusters,
      miniCluster("elastic", env.namespace, {
        size: 2,
        maxSize: 4,
        pod: { annotations: KEEP_RUNNING },
      }),
    );
    await waitForRunningPods(env, "elastic", 2);
    await waitForCondition(env, "elastic", "Ready", { status: "True" });

    await kubectl(env, "scale", "minicluster/elastic", "--replicas=3");
    op = await maybeKill(env, op, d);
    await waitForJobSize(env, "elastic", 3);
    await waitForRunningPods(env, "elastic", 3);
    await eventually(async () => {
      const mc = await getMiniCluster(env, "elastic");
      assert.equal((mc.status as { size?: number }).size, 3);
    });
    await waitForCondition(env, "elastic", "Ready", { status: "True" });

    await kubectl(env, "scale", "minicluster/elastic", "--replicas=1");
    await waitForJobSize(env, "elastic", 1);
    await waitForRunningPods(env, "elastic", 1);

    // The CRD refuses size > maxSize, but maxSize may be raised; the limit stays the maxSize the
    // brokers were started with (their hostlist has 4 entries), so 7 is clamped to 4.
    await env.client.patch(
      MiniClusters,
      env.namespace,
      "elastic",
      { spec: { maxSize: 8 } },
      "merge",
    );
    await kubectl(env, "scale", "minicluster/elastic", "--replicas=7");
    op = await maybeKill(env, op, d);
    const clamped = await waitForCondition(env, "elastic", "SizeClamped", {
      status: "True",
      reason: "AboveMaximum",
    });
    assert.equal(clamped.spec.size, 7, "the user's spec is left as written");
    assert.equal(clamped.spec.maxSize, 8);
    await waitForJobSize(env, "elastic", 4);
    await waitForRunningPods(env, "elastic", 4);
    await eventually(async () => {
      const mc = await getMiniCluster(env, "elastic");
      assert.equal((mc.status as { size?: number }).size, 4);
      assert.equal((mc.status as { maximumSize?: number }).maximumSize, 4);
    });

    // Events go out after the writes they report, so they may land just after what they report.
    await eventually(async () => {
      const events = await eventsOf(env, "elastic");
      assert.ok(
        events.some((e) => e.reason === "AboveMaximum" && e.type === "Warning"),
        "a Warning says the size was clamped",
      );
      if (d === "undisturbed") {
        const scaled = events.filter((e) => e.reason === "Scaled").map((e) => e.message);
        assert.deepEqual(scaled, [
          "scaled the Job from 2 to 3 pods",
          "scaled the Job from 3 to 1 pods",
          "scaled the Job from 1 to 4 pods",
        ]);
      }
    });
    await op.stop();
  }, { timeoutMs: 120_000 });

  e2eTest(`e2e complete: the broker pod completes, Succeeded (${d})`, async (env) => {
    let op = await env.startOperator();
    await env.client.create(
      MiniClusters,
      miniCluster("done", env.namespace, {
        size: 2,
        pod: { annotations: { "kwok.x-k8s.io/complete-after": "3s" } },
      }),
    );
    if (d === "SIGKILL") await waitForRunningPods(env, "done", 2);
    op = await maybeKill(env, op, d);
    await waitForCondition(env, "done", "Succeeded", { status: "True", reason: "JobComplete" });
    await waitForCondition(env, "done", "Ready", { status: "False", reason: "JobComplete" });
    const pods = await podsOf(env, "done");
    const broker = pods.find((p) =>
      p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] === "0"
    );
    assert.equal(broker?.status?.phase, "Succeeded", "the lead broker's pod completed");
    // cleanup is false: the MiniCluster stays, reporting what happened.
    assert.ok(await getMiniCluster(env, "done"));
    await eventually(async () => {
      const reasons = (await eventsOf(env, "done")).map((e) => e.reason);
      assert.ok(reasons.includes("JobComplete"), reasons.join());
    });
    await op.stop();
  });

  e2eTest(
    `e2e cleanup: true deletes the MiniCluster once its Job completed (${d})`,
    async (env) => {
      let op = await env.startOperator();
      await env.client.create(
        MiniClusters,
        miniCluster("oneshot", env.namespace, {
          size: 2,
          cleanup: true,
          pod: { annotations: { "kwok.x-k8s.io/complete-after": "3s" } },
        }),
      );
      if (d === "SIGKILL") await waitForRunningPods(env, "oneshot", 2);
      op = await maybeKill(env, op, d);
      await waitForGone(env, "oneshot");
      await waitForNoLeftovers(env);
      const reasons = (await eventsOf(env, "oneshot")).map((e) => e.reason);
      assert.ok(reasons.includes("CleanupAfterCompletion"), reasons.join());
      await op.stop();
    },
  );

  e2eTest(`e2e delete: the finalizer removes every child and pod (${d})`, async (env) => {
    let op = await env.startOperator();
    await env.client.create(
      MiniClusters,
      miniCluster("doomed", env.namespace, { size: 3, pod: { annotations: KEEP_RUNNING } }),
    );
    await waitForRunningPods(env, "doomed", 3);
    await waitForCondition(env, "doomed", "Ready", { status: "True" });
    assert.ok((await leftovers(env)).length > 4, "children exist before the delete");

    await kubectl(env, "delete", "minicluster", "doomed", "--wait=false");
    if (d === "SIGKILL") {
      // Kill it mid-cleanup: the Job is being deleted, the finalizer is still on.
      await eventually(async () => {
        const job = await jobOf(env, "doomed");
        assert.ok(job.metadata?.deletionTimestamp, "the Job is being deleted");
      }, { timeoutMs: 20_000, intervalMs: 50 }).catch(() => {});
    }
    op = await maybeKill(env, op, d);
    await waitForGone(env, "doomed");
    await waitForNoLeftovers(env);
    await op.stop();
  });
}

e2eTest(
  "e2e unschedulable: the Ready condition says why the pods wait, until they can run",
  async (env) => {
    // A node label only this test sets: the scheduler finds no node until the test labels one.
    const label = `e2e.minicluster.flux-framework.org/${env.namespace}`;
    const op = await env.startOperator();
    const nodes = await env.client.list<Node>(Nodes, {});
    const node = nodes.items.map((n) => n.metadata!.name!).find((n) => n.startsWith("kwok-node-"));
    assert.ok(node, "a KWOK node");
    try {
      await env.client.create(
        MiniClusters,
        miniCluster("waiting", env.namespace, {
          size: 2,
          pod: { annotations: KEEP_RUNNING, nodeSelector: { [label]: "yes" } },
        }),
      );
      const stuck = await eventually(async () => {
        const mc = await getMiniCluster(env, "waiting");
        const ready = conditionOf(mc, "Ready");
        assert.equal(ready?.status, "False");
        assert.equal(ready?.reason, "PodsNotReady");
        assert.match(
          ready?.message ?? "",
          /^0\/2 pods ready; Unschedulable: .*node affinity\/selector/,
        );
        return ready!.message!;
      }, { timeoutMs: 45_000, intervalMs: 250 });
      assert.match(stuck, /\(pods waiting-0-\w+, waiting-1-\w+\)$/, stuck);
      // Unschedulable is not a condition change: no Event beyond what a new MiniCluster gets.
      assert.deepEqual((await eventsOf(env, "waiting")).map((e) => e.reason), []);

      await env.client.patch(
        Nodes,
        undefined,
        node,
        { metadata: { labels: { [label]: "yes" } } },
        "merge",
      );
      await waitForRunningPods(env, "waiting", 2);
      const mc = await waitForCondition(env, "waiting", "Ready", {
        status: "True",
        reason: "PodsReady",
      });
      assert.equal(conditionOf(mc, "Ready")?.message, "2/2 pods ready");
    } finally {
      await env.client.patch(
        Nodes,
        undefined,
        node,
        { metadata: { labels: { [label]: null } } },
        "merge",
      );
      await op.stop();
    }
  },
);
