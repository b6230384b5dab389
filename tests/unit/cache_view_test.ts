import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Pod, PodCondition, Secret } from "kubernetes-types/core/v1.d.ts";
import {
  dataView,
  digestOf,
  jobView,
  podView,
} from "../../controllers/minicluster/kinds/cache_view.ts";
import { upToDate } from "../../controllers/minicluster/kinds/diff.ts";
import {
  WORKSPACE_ROLE,
  WORKSPACE_ROLE_LABEL,
} from "../../controllers/minicluster/workspace/legacy_workspace.ts";
import {
  activePods,
  countReadyPods,
  podProblems,
} from "../../controllers/minicluster/status/status.ts";
import { Cache, type StoreEvent } from "../../runtime/cache/store.ts";
import { dropManagedFields } from "../../runtime/cache/transforms.ts";

const jobOwner = {
  apiVersion: "batch/v1",
  kind: "Job",
  name: "mc",
  uid: "job-1",
  controller: true,
};

function jobPod(rv: string, phase: string, ready: boolean, extra: Partial<Pod["status"]> = {}) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "mc-0-abc",
      namespace: "ns",
      uid: "p1",
      resourceVersion: rv,
      creationTimestamp: "2026-01-01T00:00:00Z",
      labels: { "job-name": "mc", "batch.kubernetes.io/job-completion-index": "0" },
      annotations: { "batch.kubernetes.io/job-completion-index": "0" },
      ownerReferences: [jobOwner],
      managedFields: [{ manager: "kube-controller-manager", operation: "Update" }],
    },
    spec: { containers: [{ name: "c", image: "i" }], nodeName: "n1" },
    status: {
      phase,
      podIP: `10.0.0.${rv}`,
      conditions: [
        { type: "PodScheduled", status: "True", lastTransitionTime: `t${rv}` },
        { type: "Ready", status: ready ? "True" : "False", lastTransitionTime: `t${rv}` },
      ],
      containerStatuses: [{ name: "c", image: "i", imageID: "", ready, restartCount: 0 }],
      ...extra,
    },
  } as Pod;
}

Deno.test("podView: a Job's pod keeps identity, owner, labels, phase and readiness only (and the lead's IP)", () => {
  const view = podView(dropManagedFields(jobPod("5", "Running", true)));
  assert.deepEqual(view, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "mc-0-abc",
      namespace: "ns",
      uid: "p1",
      resourceVersion: "5",
      creationTimestamp: "2026-01-01T00:00:00Z",
      deletionTimestamp: undefined,
      labels: { "job-name": "mc", "batch.kubernetes.io/job-completion-index": "0" },
      ownerReferences: [jobOwner],
    },
    // Index 0, running: its IP, which the queue reporter is read at (fluxqueue/lead.ts).
    status: {
      phase: "Running",
      podIP: "10.0.0.5",
      conditions: [{ type: "Ready", status: "True" }],
    },
  });
  // Another index keeps no IP; nor does the lead before it runs.
  const other = jobPod("5", "Running", true);
  other.metadata!.labels!["batch.kubernetes.io/job-completion-index"] = "1";
  assert.equal(podView(other).status?.podIP, undefined);
  assert.equal(podView(jobPod("5", "Pending", false)).status?.podIP, undefined);
  // status.ts reads the same answers from the view as from the whole pod.
  const whole = [jobPod("5", "Running", true)];
  const viewed = whole.map(podView);
  const job = { metadata: { uid: "job-1" } } as Job;
  assert.equal(countReadyPods(viewed, job), countReadyPods(whole, job));
  assert.equal(activePods(viewed, job).length, activePods(whole, job).length);
});

Deno.test("podView: a pod that cannot start keeps why, and status reads the same from it", () => {
  const stuck = jobPod("7", "Pending", false, {
    podIP: undefined,
    conditions: [{
      type: "PodScheduled",
      status: "False",
      reason: "Unschedulable",
      message: "0/4 nodes are available",
      lastTransitionTime: "t7",
      lastProbeTime: null,
    } as unknown as PodCondition],
    initContainerStatuses: [{
      name: "flux-view",
      image: "v",
      imageID: "",
      ready: false,
      restartCount: 3,
      state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 40s" } },
      lastState: { terminated: { exitCode: 1, reason: "Error" } },
    }],
    containerStatuses: [{
      name: "c",
      image: "i",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: "PodInitializing" } },
    }],
  });
  assert.deepEqual(podView(stuck).status, {
    phase: "Pending",
    conditions: [{
      type: "PodScheduled",
      status: "False",
      reason: "Unschedulable",
      message: "0/4 nodes are available",
    }],
    initContainerStatuses: [{
      name: "flux-view",
      state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 40s" } },
    }],
  });
  const job = { metadata: { uid: "job-1" } } as Job;
  assert.deepEqual(podProblems([podView(stuck)], job), podProblems([stuck], job));
  assert.equal(podProblems([stuck], job).length, 2);
});

Deno.test("podView: pods not owned by a Job (the services pod) are kept whole", () => {
  const pod = jobPod("1", "Running", true);
  const own = {
    ...pod,
    metadata: {
      ...pod.metadata,
      ownerReferences: [{ ...jobOwner, apiVersion: "flux-framework.org/v1alpha2", kind: "X" }],
    },
  };
  assert.equal(podView(own), own);
});

Deno.test("jobView: drops the status counters, keeps spec, metadata and conditions", () => {
  const job: Job = {
    metadata: { name: "mc", annotations: { a: "b" } },
    spec: { parallelism: 4, template: { spec: { containers: [] } } },
    status: {
      active: 3,
      ready: 2,
      conditions: [{ type: "Complete", status: "True", message: "done" }],
    },
  };
  assert.deepEqual(jobView(job), {
    metadata: job.metadata,
    spec: job.spec,
    status: { conditions: job.status!.conditions },
  });
  assert.deepEqual(jobView({ ...job, status: { active: 1 } }), {
    metadata: job.metadata,
    spec: job.spec,
  });
});

Deno.test("store: a quiet cache wakes nobody for an update its view cannot see", () => {
  const cache = new Cache<Pod>("pods", {}, { quietUnchanged: true });
  cache.replace([podView(jobPod("1", "Pending", false))], { synced: true });
  const events: StoreEvent<Pod>[] = [];
  cache.subscribe((e) => events.push(e));
  // Scheduled, new IP, container status: nothing the view keeps.
  cache.apply("MODIFIED", podView(jobPod("2", "Pending", false, { hostIP: "1.2.3.4" })));
  assert.equal(events.length, 0);
  assert.equal(cache.get("ns", "mc-0-abc")?.metadata?.resourceVersion, "2", "still stored");
  cache.apply("MODIFIED", podView(jobPod("3", "Running", true)));
  assert.deepEqual(events.map((e) => e.type), ["updated"]);
  // A relist with only versions moved is quiet too.
  cache.replace([podView(jobPod("4", "Running", true, { podIP: "10.0.0.3" }))]);
  assert.equal(events.length, 1);
  // A plain cache still reports every new version.
  const plain = new Cache<ConfigMap>("configmaps");
  const seen: string[] = [];
  plain.subscribe((e) => seen.push(e.type));
  plain.apply("ADDED", { metadata: { name: "a", resourceVersion: "1" } });
  plain.apply("MODIFIED", { metadata: { name: "a", resourceVersion: "2" } });
  assert.deepEqual(seen, ["added", "updated"]);
});

Deno.test("dropManagedFields: a copy without managedFields; objects without them unchanged", () => {
  const pod = jobPod("1", "Running", true);
  const out = dropManagedFields(pod);
  assert.equal(out.metadata?.managedFields, undefined);
  assert.ok(pod.metadata?.managedFields, "the input is not changed");
  const bare = { metadata: { name: "x" } };
  assert.equal(dropManagedFields(bare), bare);
});

Deno.test("digestOf: stable, fixed length, and different for nearly equal strings", () => {
  const script = "#!/bin/sh\necho hello \u2014 world\n".repeat(200);
  assert.equal(digestOf(script), digestOf(script.slice()));
  assert.match(digestOf(script), /^digest:\d+:[0-9a-f]{16}$/);
  const seen = new Set<string>();
  for (let i = 0; i < script.length; i += 97) {
    seen.add(digestOf(script.slice(0, i) + "X" + script.slice(i + 1)));
  }
  seen.add(digestOf(script));
  seen.add(digestOf(script + " "));
  seen.add(digestOf(""));
  seen.add(digestOf("a"));
  seen.add(digestOf("b"));
  assert.equal(seen.size, Math.ceil(script.length / 97) + 5);
});

Deno.test("dataView: values become digests, a view of a view is itself, the workspace stays whole", () => {
  const cm: ConfigMap = {
    metadata: { name: "mc-entrypoint", labels: { app: "x" } },
    data: { "start.sh": "echo start\n".repeat(500), "empty": "" },
  };
  const view = dataView(cm);
  assert.equal(view.metadata, cm.metadata);
  assert.deepEqual(Object.keys(view.data!), ["start.sh", "empty"]);
  assert.equal(view.data!["start.sh"], digestOf(cm.data!["start.sh"]));
  assert.ok(view.data!["start.sh"].length < 40);
  assert.equal(dataView(view), view);
  assert.equal(cm.data!["empty"], ""); // the input is not changed

  const secret: Secret = { metadata: { name: "s" }, data: { "curve.cert": btoa("key") } };
  assert.notEqual(dataView(secret).data!["curve.cert"], secret.data!["curve.cert"]);

  const workspace: ConfigMap = {
    metadata: { name: "mc-workspace", labels: { [WORKSPACE_ROLE_LABEL]: WORKSPACE_ROLE } },
    data: { maxSize: "4", size: "2" },
  };
  assert.equal(dataView(workspace), workspace);
});

Deno.test("dataView: drift in a value is still seen once both sides are views", () => {
  const desired: ConfigMap = {
    metadata: { name: "mc-entrypoint" },
    data: { "start.sh": "echo start\n", "other": "x" },
  };
  const cached = dataView({ ...desired, metadata: { ...desired.metadata, uid: "u" } });
  assert.ok(upToDate(cached, dataView(desired)));
  const edited = dataView({ ...desired, data: { ...desired.data, "start.sh": "echo evil\n" } });
  assert.ok(!upToDate(edited, dataView(desired)));
  const missing = dataView({ ...desired, data: { "start.sh": "echo start\n" } });
  assert.ok(!upToDate(missing, dataView(desired)));
});
