/**
 * The lookups a reconcile makes in the caches of the MiniCluster controller, and what the watches
 * select. Which kind each cache holds (`MiniClusterStores`), and how it is watched, transformed,
 * indexed and compared, is the table of child_kinds.ts.
 *
 * The operator caches MiniClusters and only the objects it labelled itself
 * (app.kubernetes.io/managed-by=minicluster-operator): MiniClusterWorkspaces, ConfigMaps, Secrets,
 * Services, Jobs and the Job's pods (which carry the label through the pod template), the gang's
 * PodGroups (where the API server serves them); and of Events only the Job controller's
 * FailedCreate ones on Jobs (create_failures.ts).
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../../../api/mod.ts";
import type { ResourceType } from "../../../runtime/client/resources.ts";
import { controllerOf, type KubeObject, type Store } from "../../../runtime/cache/store.ts";
import {
  JOB_NAME_LABEL,
  jobName,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  MINICLUSTER_LABEL,
} from "../children/names.ts";

/** The label selector of every child watch: only what this operator created. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** Whether a cached child needs no write to become the desired one. */
export type Matcher = (observed: KubeObject, desired: KubeObject) => boolean;

/** The pods' index by the Job that made them: "namespace/job-name" from the Job controller's label. */
export const JOB_PODS_INDEX = "job";

export function jobOfPod(pod: KubeObject): string[] {
  const job = pod.metadata?.labels?.[JOB_NAME_LABEL];
  return job ? [`${pod.metadata?.namespace ?? ""}/${job}`] : [];
}

/** The Events' index by the uid of the object they are about. */
export const INVOLVED_INDEX = "involved";

export function involvedUid(event: KubeObject): string[] {
  const uid = (event as Event).involvedObject?.uid;
  return uid ? [uid] : [];
}

export type { WatchSpec } from "../../../runtime/cache/watch_spec.ts";
import type { WatchSpec } from "../../../runtime/cache/watch_spec.ts";

/** Gives the shared store of a kind (the manager's `watch`, or a test's own watchers). */
export type WatchFn = <T extends KubeObject>(rt: ResourceType, spec?: WatchSpec) => Store<T>;

/** The Job of `mc` as the cache shows it, when `mc` controls it (not a namesake of another). */
export function ownJob(stores: { jobs: Store<Job> }, mc: MiniCluster): Job | undefined {
  const job = stores.jobs.get(mc.metadata?.namespace, jobName(mc));
  return job && controllerOf(job)?.uid === mc.metadata?.uid ? job : undefined;
}

/**
 * Pods of this MiniCluster's Job (by the Job controller's own label and our MiniCluster label),
 * looked up in the pods' index by Job: a scan of the namespace's pods would make every reconcile
 * cost as much as the namespace holds, and a pass over N MiniClusters in one namespace N².
 */
export function podsOf(stores: { pods: Store<Pod> }, mc: MiniCluster): Pod[] {
  const name = mc.metadata!.name!;
  return stores.pods.byIndex(JOB_PODS_INDEX, `${mc.metadata?.namespace ?? ""}/${jobName(mc)}`)
    .filter((pod) => pod.metadata?.labels?.[MINICLUSTER_LABEL] === name);
}
