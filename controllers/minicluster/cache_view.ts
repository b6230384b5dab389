/**
 * What the operator's caches keep of the Job's pods and of Jobs: only what the reconciler reads.
 *
 * At 1,000 MiniClusters of size 4 the pod cache holds 4,000 pods, each several KiB of spec and
 * status the operator never looks at. The reconciler reads of a Job's pod only its identity, labels,
 * owner, creation and deletion times, its phase and whether it is Ready (status.ts); of a Job, its
 * metadata and spec (compared with the desired Job by diff.ts) and its conditions (status.ts), not
 * the counters the Job controller updates with every pod change. Dropping the rest saves memory and,
 * because the store only wakes listeners for changes it can see, also the reconciles a pod's or a
 * Job's irrelevant updates would cause.
 *
 * The services pod is a child the reconciler compares field by field: pods not owned by a Job are
 * kept whole.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod, PodCondition } from "kubernetes-types/core/v1.d.ts";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import { controllerOf } from "../../runtime/store.ts";

/** A Job's pod reduced to what status.ts and the reconciler read; other pods unchanged. */
export function podView(pod: Pod): Pod {
  if (controllerOf(pod)?.kind !== "Job") return pod;
  const m = pod.metadata ?? {};
  const metadata: ObjectMeta = {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    creationTimestamp: m.creationTimestamp,
    deletionTimestamp: m.deletionTimestamp,
    labels: m.labels,
    ownerReferences: m.ownerReferences,
  };
  const ready = pod.status?.conditions?.filter((c) => c.type === "Ready")
    .map((c): PodCondition => ({ type: c.type, status: c.status }));
  return {
    apiVersion: pod.apiVersion,
    kind: pod.kind,
    metadata,
    status: { phase: pod.status?.phase, ...(ready?.length ? { conditions: ready } : {}) },
  };
}

/** A Job without the status counters: metadata, spec and conditions stay. */
export function jobView(job: Job): Job {
  const conditions = job.status?.conditions;
  const { status: _, ...rest } = job;
  return conditions?.length ? { ...rest, status: { conditions } } : rest;
}
