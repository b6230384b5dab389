// MiniClusters queued by the real Kueue (v0.17.0, built from its Go module and running in the
// cluster, hack/cluster/kueue.ts) on KWOK nodes: admission by quota and in order, preemption by
// priority, the user's suspension of an admitted MiniCluster, node selectors Kueue injects, gang
// scheduling and elastic resizing under Kueue. What Kueue did is read from its Workloads and the
// Job, what the operator did from its own request counts.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { jobPodGroup } from "../../controllers/minicluster/children/gang.ts";
import { kubectl, type TestEnv } from "../harness.ts";
import {
  conditionOf,
  eventsOf,
  eventually,
  getMiniCluster,
  jobOf,
  KEEP_RUNNING,
  miniCluster,
  podsOf,
  waitForCondition,
  waitForRunningPods,
} from "./env.ts";
import {
  FLAVOR_NODE_LABELS,
  jobWrites,
  kueueTest,
  LOCAL_QUEUE,
  priorityClass,
  QUEUED,
  staysWithoutPods,
  workloadCondition,
  workloadsOf,
} from "./kueue_env.ts";

const INDEX_LABEL = "batch.kubernetes.io/job-completion-index";

/** A MiniCluster of `size` pods of one CPU each, queued in the scenario's LocalQueue. */
function queued(
  env: { namespace: string },
  name: string,
  spec: Partial<MiniCluster["spec"]> = {},
): MiniCluster {
  const mc = miniCluster(name, env.namespace, {
    size: 2,
    jobLabels: QUEUED,
    pod: { annotations: KEEP_RUNNING },
    ...spec,
  });
  mc.spec!.containers = mc.spec!.containers.map((c) => ({
    ...c,
    resources: { requests: { cpu: 1, memory: "64Mi" } },
  }));
  return mc;
}

/** Lets the lead broker of `name` finish, so that its MiniCluster succeeds and frees its quota. */
async function finish(env: TestEnv, name: string): Promise<void> {
  const lead = (await podsOf(env, name)).find((p) =>
    p.metadata?.labels?.[INDEX_LABEL] === "0" && !p.metadata.deletionTimestamp
  );
  assert.ok(lead, `${name}: no lead broker pod`);
  await kubectl(env, "annotate", "pod", lead.metadata!.name!, "kwok.x-k8s.io/keep-running-");
  await waitForCondition(env, name, "Succeeded", { status: "True" }, 60_000);
}

kueueTest(
  "e2e kueue: two MiniClusters for one queue's quota run one after the other; the waiting one has no pods and names the queue",
  { cpu: 2 },
  async (env, op) => {
    await env.client.create(MiniClusters, queued(env, "first"));
    await waitForRunningPods(env, "first", 2);
    await waitForCondition(env, "first", "Ready", { status: "True" });
    const writesBefore = await jobWrites(op);

    await env.client.create(MiniClusters, queued(env, "second"));
    const waiting = await waitForCondition(env, "second", "Suspended", {
      status: "True",
      reason: "WaitingForAdmission",
    });
    const message = conditionOf(waiting, "Suspended")!.message ?? "";
    assert.match(message, new RegExp(`queue ${LOCAL_QUEUE}`));
    assert.match(message, /Kueue: .*insufficient unused quota for cpu/);
    assert.equal(conditionOf(waiting, "Ready")?.reason, "WaitingForAdmission");
    await staysWithoutPods(env, "second", 3_000);
    assert.equal((await jobOf(env, "second")).spec?.suspend, true);
    // Kueue's visibility API (an aggregated API: the local apiserver runs the aggregation layer)
    // lists the waiting MiniCluster's Workload first in its queue.
    const pending = JSON.parse(
      await kubectl(
        env,
        "get",
        "--raw",
        `/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/${env.namespace}/localqueues/` +
          `${LOCAL_QUEUE}/pendingworkloads`,
      ),
    ) as { items: { metadata: { name: string }; positionInLocalQueue: number }[] };
    assert.deepEqual(
      pending.items.map((
        w,
      ) => [w.metadata.name.replace(/-[a-z0-9]+$/, ""), w.positionInLocalQueue]),
      [["job-second", 0]],
      `Kueue's pending workloads: ${JSON.stringify(pending.items)}`,
    );

    await finish(env, "first");
    await waitForRunningPods(env, "second", 2);
    await waitForCondition(env, "second", "Ready", { status: "True" });
    const job: Job = await jobOf(env, "second");
    // Kueue's admission put the flavor's node labels into the template, and they stay.
    for (const [k, v] of Object.entries(FLAVOR_NODE_LABELS)) {
      assert.equal(job.spec?.template?.spec?.nodeSelector?.[k], v, `nodeSelector ${k}`);
    }
    // One write of the operator (the create) and one change of the spec after it (Kueue's
    // start: unsuspend and the node selector): nobody wrote the Job back and forth.
    assert.equal((await jobWrites(op)) - writesBefore, 1, "the operator's writes to Jobs");
    assert.equal(job.metadata?.generation, 2, "the Job's spec changed once after its creation");
    const [wl] = await workloadsOf(env, job.metadata!.uid!);
    assert.ok(workloadCondition(wl, "Admitted"), "second's Workload is admitted");
  },
  180_000,
);

kueueTest(
  "e2e kueue: a higher-priority MiniCluster preempts a running one, which reports it and runs again with its spec intact",
  {
    cpu: 2,
    preemption: true,
    priorities: { low: 100, high: 1000 },
  },
  async (env) => {
    const low = queued(env, "low", {
      pod: { annotations: KEEP_RUNNING, priorityClassName: priorityClass(env, "low") },
    });
    await env.client.create(MiniClusters, low);
    await waitForRunningPods(env, "low", 2);
    const specBefore = (await getMiniCluster(env, "low")).spec;

    await env.client.create(
      MiniClusters,
      queued(env, "high", {
        pod: { annotations: KEEP_RUNNING, priorityClassName: priorityClass(env, "high") },
      }),
    );
    await waitForRunningPods(env, "high", 2, 60_000);
    const preempted = await waitForCondition(env, "low", "Suspended", {
      status: "True",
      reason: "Preempted",
    });
    assert.match(
      conditionOf(preempted, "Suspended")!.message ?? "",
      /evicted by Kueue \(Preempted\): Preempted to accommodate a workload/,
    );
    assert.equal(conditionOf(preempted, "Ready")?.reason, "Preempted");
    await eventually(async () => {
      const events = await eventsOf(env, "low");
      assert.ok(
        events.some((e) =>
          e.reason === "Preempted" && /Preempted to accommodate/.test(e.message ?? "")
        ),
        `low's Events: ${events.map((e) => `${e.type}/${e.reason}`).join(", ")}`,
      );
    });
    assert.deepEqual(
      await podsOf(env, "low").then((p) => p.filter((x) => !x.metadata?.deletionTimestamp).length),
      0,
    );

    await finish(env, "high");
    await waitForRunningPods(env, "low", 2, 60_000);
    await waitForCondition(env, "low", "Ready", { status: "True" });
    assert.deepEqual((await getMiniCluster(env, "low")).spec, specBefore, "low's spec");
  },
  180_000,
);

kueueTest(
  "e2e kueue: spec.suspend on an admitted MiniCluster gives its quota back, and once cleared it runs only when Kueue admits it again",
  { cpu: 2 },
  async (env) => {
    await env.client.create(MiniClusters, queued(env, "a"));
    await waitForRunningPods(env, "a", 2);
    const uid = (await jobOf(env, "a")).metadata!.uid!;

    await env.client.patch(
      MiniClusters,
      env.namespace,
      "a",
      { spec: { suspend: true } },
      "merge",
    );
    const suspended = await waitForCondition(env, "a", "Suspended", {
      status: "True",
      reason: "Suspended",
    });
    assert.match(
      conditionOf(suspended, "Suspended")!.message ?? "",
      /Workload .* is deactivated/,
    );
    await eventually(async () => assert.deepEqual((await podsOf(env, "a")).length, 0));
    const [inactive] = await workloadsOf(env, uid);
    assert.equal(inactive.spec?.active, false, "a's Workload is deactivated");

    // Its quota is free: another MiniCluster is admitted and takes all of it.
    await env.client.create(MiniClusters, queued(env, "b"));
    await waitForRunningPods(env, "b", 2, 60_000);

    // Cleared while b holds the quota: a waits for Kueue and makes no pod meanwhile.
    await env.client.patch(
      MiniClusters,
      env.namespace,
      "a",
      { spec: { suspend: false } },
      "merge",
    );
    await eventually(async () => {
      const [wl] = await workloadsOf(env, uid);
      assert.notEqual(wl.spec?.active, false, "a's Workload is active again");
    });
    await waitForCondition(env, "a", "Suspended", {
      status: "True",
      reason: "WaitingForAdmission",
    });
    await staysWithoutPods(env, "a", 5_000);
    assert.equal((await jobOf(env, "a")).spec?.suspend, true);

    await finish(env, "b");
    await waitForRunningPods(env, "a", 2, 60_000);
    const [admitted] = await workloadsOf(env, uid);
    assert.ok(workloadCondition(admitted, "Admitted"), "a runs admitted by Kueue");
    const stopped = await kubectl(
      env,
      "get",
      "events",
      "--field-selector",
      `involvedObject.kind=Job,involvedObject.name=a,reason=Stopped`,
      "-o",
      "jsonpath={.items[*].message}",
    );
    assert.doesNotMatch(stopped, /Not admitted/, "Kueue never had to stop an unadmitted run");
  },
  180_000,
);

kueueTest(
  "e2e kueue: a queued MiniCluster suspended from the start has no Job until it is resumed",
  { cpu: 2 },
  async (env) => {
    await env.client.create(MiniClusters, queued(env, "later", { suspend: true }));
    const mc = await waitForCondition(env, "later", "Suspended", {
      status: "True",
      reason: "Suspended",
    });
    assert.match(conditionOf(mc, "Suspended")!.message ?? "", /created when it is false/);
    await new Promise((r) => setTimeout(r, 2_000));
    await assert.rejects(jobOf(env, "later"), /not ?found/i);

    await env.client.patch(
      MiniClusters,
      env.namespace,
      "later",
      { spec: { suspend: false } },
      "merge",
    );
    await waitForRunningPods(env, "later", 2, 60_000);
    const job = await jobOf(env, "later");
    const [wl] = await workloadsOf(env, job.metadata!.uid!);
    assert.ok(workloadCondition(wl, "Admitted"));
  },
  120_000,
);

kueueTest(
  "e2e kueue: a ganged MiniCluster is admitted by Kueue and placed as one gang",
  { cpu: 3 },
  async (env) => {
    await env.client.create(MiniClusters, queued(env, "gang", { size: 3, gang: {} }));
    await waitForRunningPods(env, "gang", 3, 60_000);
    await waitForCondition(env, "gang", "GangScheduling", {
      status: "True",
      reason: "Scheduled",
    });
    const job = await jobOf(env, "gang");
    assert.equal(jobPodGroup(job), "gang");
    const [wl] = await workloadsOf(env, job.metadata!.uid!);
    assert.ok(workloadCondition(wl, "Admitted"));
  },
  120_000,
);

kueueTest(
  "e2e kueue: an elastic MiniCluster (ElasticJobsViaWorkloadSlices) grows within its quota; a pod beyond it waits gated",
  { cpu: 3 },
  async (env) => {
    await env.client.create(
      MiniClusters,
      queued(env, "elastic", {
        maxSize: 4,
        jobAnnotations: { "kueue.x-k8s.io/elastic-job": "true" },
      }),
    );
    await waitForRunningPods(env, "elastic", 2);
    await kubectl(env, "scale", "minicluster/elastic", "--replicas=3");
    await waitForRunningPods(env, "elastic", 3, 60_000);

    // A fourth pod needs a fourth CPU: Kueue keeps it gated while the larger slice waits.
    await kubectl(env, "scale", "minicluster/elastic", "--replicas=4");
    await eventually(async () => {
      const gated = (await podsOf(env, "elastic")).filter((p) =>
        p.spec?.schedulingGates?.some((g) => g.name === "kueue.x-k8s.io/elastic-job")
      );
      assert.equal(gated.length, 1, "one pod gated by Kueue");
    }, { timeoutMs: 30_000 });
    await eventually(async () => {
      const mc = await getMiniCluster(env, "elastic");
      assert.match(conditionOf(mc, "Ready")?.message ?? "", /3\/4 pods ready; SchedulingGated/);
    }, { timeoutMs: 30_000 });
    // The three admitted pods keep running.
    const running = (await podsOf(env, "elastic")).filter((p) => p.status?.phase === "Running");
    assert.equal(running.length, 3);
  },
  120_000,
);
