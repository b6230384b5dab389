/**
 * The caches the MiniCluster controller reads: one row per watched kind, with the selector it is
 * watched with, what its cache keeps of an object (cache_view.ts) and, for the kinds of children,
 * how a cached child is compared with a desired one — the two go together, since a cache that keeps
 * digests of values must be compared as digests.
 *
 * The operator caches MiniClusters and only the objects it labelled itself
 * (app.kubernetes.io/managed-by=minicluster-operator): MiniClusterWorkspaces, ConfigMaps, Secrets,
 * Services, Jobs and the Job's pods (which carry the label through the pod template); and of
 * Events only the Job controller's FailedCreate ones on Jobs (create_failures.ts).
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Event, Pod, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import {
  ConfigMaps,
  Events,
  Jobs,
  Pods,
  type ResourceType,
  Secrets,
  Services,
} from "../../runtime/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import { controllerOf, type IndexFunc, type KubeObject, type Store } from "../../runtime/store.ts";
import type { Transform } from "../../runtime/transforms.ts";
import { dataView, jobView, podView } from "./cache_view.ts";
import {
  JOB_NAME_LABEL,
  jobName,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  MINICLUSTER_LABEL,
} from "./children/names.ts";
import { upToDate } from "./diff.ts";
import { FAILED_CREATE_SELECTOR, failedCreateView } from "./create_failures.ts";

/** The caches the reconciler reads (the operator's label-selected watches). */
export interface MiniClusterStores {
  miniClusters: Store<MiniCluster>;
  workspaces: Store<MiniClusterWorkspace>;
  configMaps: Store<ConfigMap>;
  secrets: Store<Secret>;
  services: Store<Service>;
  jobs: Store<Job>;
  pods: Store<Pod>;
  /** The Job controller's FailedCreate Events on Jobs (create_failures.ts). */
  jobEvents: Store<Event>;
}

/** The label selector of every child watch: only what this operator created. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** Whether a cached child needs no write to become the desired one. */
export type Matcher = (observed: KubeObject, desired: KubeObject) => boolean;

export interface WatchedKind {
  key: keyof MiniClusterStores;
  rt: ResourceType;
  labelSelector?: string;
  fieldSelector?: string;
  transform?: Transform<KubeObject>;
  /** Extra indexes of its store, for the lookups a reconcile makes in it. */
  indexes?: Record<string, IndexFunc<KubeObject>>;
  /** How a cached child of this kind is compared with a desired one (children's kinds only). */
  matches?: Matcher;
}

/** The pods' index by the Job that made them: "namespace/job-name" from the Job controller's label. */
const JOB_PODS_INDEX = "job";

function jobOfPod(pod: KubeObject): string[] {
  const job = pod.metadata?.labels?.[JOB_NAME_LABEL];
  return job ? [`${pod.metadata?.namespace ?? ""}/${job}`] : [];
}

/** The Events' index by the uid of the object they are about. */
export const INVOLVED_INDEX = "involved";

function involvedUid(event: KubeObject): string[] {
  const uid = (event as Event).involvedObject?.uid;
  return uid ? [uid] : [];
}

/** Values are cached as digests (cache_view.ts): compare the desired values as digests too. */
const sameData: Matcher = (observed, desired) =>
  upToDate(dataView(observed as ConfigMap), dataView(desired as ConfigMap));

export const WATCHED: readonly WatchedKind[] = [
  { key: "miniClusters", rt: MiniClusters },
  // Never compared: a create-once dependent (workspace.ts).
  { key: "workspaces", rt: MiniClusterWorkspaces, labelSelector: MANAGED_SELECTOR },
  {
    key: "configMaps",
    rt: ConfigMaps,
    labelSelector: MANAGED_SELECTOR,
    transform: dataView as Transform<KubeObject>,
    matches: sameData,
  },
  {
    key: "secrets",
    rt: Secrets,
    labelSelector: MANAGED_SELECTOR,
    transform: dataView as Transform<KubeObject>,
    matches: sameData,
  },
  { key: "services", rt: Services, labelSelector: MANAGED_SELECTOR, matches: upToDate },
  {
    key: "jobs",
    rt: Jobs,
    labelSelector: MANAGED_SELECTOR,
    transform: jobView as Transform<KubeObject>,
    matches: upToDate,
  },
  {
    key: "pods",
    rt: Pods,
    labelSelector: MANAGED_SELECTOR,
    transform: podView as Transform<KubeObject>,
    indexes: { [JOB_PODS_INDEX]: jobOfPod },
    matches: upToDate,
  },
  {
    key: "jobEvents",
    rt: Events,
    fieldSelector: FAILED_CREATE_SELECTOR,
    transform: failedCreateView as unknown as Transform<KubeObject>,
    indexes: { [INVOLVED_INDEX]: involvedUid },
  },
];

/** The row of `key`. */
export function watched(key: keyof MiniClusterStores): WatchedKind {
  return WATCHED.find((w) => w.key === key)!;
}

/** Gives the shared store of a kind (the manager's `watch`, or a test's own watchers). */
export type WatchFn = <T extends KubeObject>(
  rt: ResourceType,
  spec?: {
    labelSelector?: string;
    fieldSelector?: string;
    transform?: Transform<KubeObject>;
    indexes?: Record<string, IndexFunc<KubeObject>>;
  },
) => Store<T>;

/** Every store of the table, from `watch`. */
export function miniClusterStores(watch: WatchFn): MiniClusterStores {
  const stores: Partial<Record<keyof MiniClusterStores, Store<KubeObject>>> = {};
  for (const { key, rt, labelSelector, fieldSelector, transform, indexes } of WATCHED) {
    stores[key] = watch(rt, {
      ...(labelSelector ? { labelSelector } : {}),
      ...(fieldSelector ? { fieldSelector } : {}),
      transform,
      ...(indexes ? { indexes } : {}),
    });
  }
  return stores as unknown as MiniClusterStores;
}

/** The Job of `mc` as the cache shows it, when `mc` controls it (not a namesake of another). */
export function ownJob(stores: Pick<MiniClusterStores, "jobs">, mc: MiniCluster): Job | undefined {
  const job = stores.jobs.get(mc.metadata?.namespace, jobName(mc));
  return job && controllerOf(job)?.uid === mc.metadata?.uid ? job : undefined;
}

/**
 * Pods of this MiniCluster's Job (by the Job controller's own label and our MiniCluster label),
 * looked up in the pods' index by Job: a scan of the namespace's pods would make every reconcile
 * cost as much as the namespace holds, and a pass over N MiniClusters in one namespace N².
 */
export function podsOf(stores: Pick<MiniClusterStores, "pods">, mc: MiniCluster): Pod[] {
  const name = mc.metadata!.name!;
  return stores.pods.byIndex(JOB_PODS_INDEX, `${mc.metadata?.namespace ?? ""}/${jobName(mc)}`)
    .filter((pod) => pod.metadata?.labels?.[MINICLUSTER_LABEL] === name);
}
