/**
 * Every kind the MiniCluster controller watches beside MiniClusters, one row each: how it is
 * watched (resource, selector), what its cache keeps (transform, indexes), how a cached child is
 * compared with a desired one (matcher; the two go together, since a cache that keeps digests of
 * values must be compared as digests), which MiniCluster its events wake and whether they are
 * batched, the wave its dependents are written in with their drift policies, whether it is pruned,
 * how cleanup deletes it, and the RBAC verbs the operator uses on it. Everything that handles
 * "each kind" reads this table: the stores (`miniClusterStores`), the controller's secondaries
 * (controller.ts), the dependents' plan (dependents.ts), the cleanup (cleanup.ts), whether a
 * MiniCluster is new (workspace.ts), the render order (render.ts, the bench's raw client), and the
 * test that checks deploy/cluster-role.yaml and the chart's ClusterRole.
 *
 * | kind (store)          | wave | when it differs                                         | pruned |
 * | --------------------- | ---- | ------------------------------------------------------- | ------ |
 * | MiniClusterWorkspace  | 0    | never updated (create-once, workspace.ts)               | no     |
 * | ConfigMap entrypoint  | 0    | applied                                                 | yes    |
 * | Secret (CURVE)        | 0    | given in the spec: applied; generated: create-once      | yes    |
 * |                       |      | (brokers that started with a certificate cannot talk to |        |
 * |                       |      | brokers with a new one)                                 |        |
 * | Service               | 0    | applied; re-created across headless⇄ClusterIP           | yes    |
 * |                       |      | (service_drift.ts)                                      |        |
 * | PodGroup (the gang)   | 0    | applied (its minCount follows the size); only where the | no     |
 * |                       |      | API server serves it (below)                            |        |
 * | Job                   | 1    | what a running Job accepts is patched, the rest         | no     |
 * |                       |      | reported (job_drift.ts)                                 |        |
 * | Pod (services pod)    | 1    | labels patched; re-created only when the desired spec   | yes    |
 * |                       |      | changed, with backoff (services_pod_drift.ts)           |        |
 * | Event (FailedCreate)  | —    | observed only (create_failures.ts)                      | —      |
 *
 * Wave 1 is what runs pods: it is written after the objects the Job's pods mount, and only once
 * they exist. The gang's PodGroup is among those: pods that name it are placed one by one until it
 * exists, so a new Job waits for it like for its ConfigMap.
 *
 * A row may be active only where the API server serves its kind (`whereServed`, an activation
 * condition as the Java Operator SDK's workflows have): PodGroups (scheduling.k8s.io/v1beta1) are a
 * beta API of Kubernetes 1.37 served only when asked for. Elsewhere the watch is not started (its
 * store is synced and empty and it asks again every `recheckMs`, runtime/watcher.ts) and nothing
 * of the kind is desired (the gang probe builds the Job unganged, gang_support.ts). Cleanup runs the waves in reverse, as the Java Operator SDK deletes dependents: the
 * pod-running kinds first (the Job in the background, so its name is free at once), and the
 * objects they mount only once their pods are gone.
 *
 * Adding a kind is a row here and a builder in children/ (called by desired.ts), with the name of
 * its store in `MiniClusterStores` (stores.ts); docs/architecture.md shows it for the Service.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Event, Pod, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { DefaultedMiniCluster, MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import { mapByControllerOwner, mapByLabel, type Mapper } from "../../runtime/controller.ts";
import { applyWhenDifferent, type Dependent, dependent } from "../../runtime/dependents.ts";
import {
  ConfigMaps,
  Events,
  Jobs,
  Pods,
  type ResourceType,
  Secrets,
  Services,
} from "../../runtime/resources.ts";
import type { IndexFunc, KubeObject, Store } from "../../runtime/store.ts";
import type { Transform } from "../../runtime/transforms.ts";
import { dataView, jobView, podView } from "./cache_view.ts";
import { curveSecretName, MINICLUSTER_LABEL } from "./children/names.ts";
import { MINICLUSTER_KIND } from "./children/owner.ts";
import { jobPodGroup, type PodGroup } from "./children/gang.ts";
import { GANG_SUPPORT_TTL_MS } from "./gang_support.ts";
import { PodGroups } from "./pod_group.ts";
import type { CurveBuilders } from "./curve_builders.ts";
import { withCurveDigest } from "./curve_integrity.ts";
import { FAILED_CREATE_SELECTOR, failedCreateView } from "./create_failures.ts";
import { type DesiredChildren, owned } from "./desired.ts";
import { upToDate } from "./diff.ts";
import { jobDrift, type JobIo } from "./job_drift.ts";
import { serviceDrift } from "./service_drift.ts";
import { type RecreateBudget, servicesPodDrift } from "./services_pod_drift.ts";
import {
  INVOLVED_INDEX,
  involvedUid,
  JOB_PODS_INDEX,
  jobOfPod,
  MANAGED_SELECTOR,
  type Matcher,
  type MiniClusterStores,
  ownJob,
  podsOf,
  type WatchFn,
} from "./stores.ts";

/** An RBAC verb the operator uses. */
export type Verb = "get" | "list" | "watch" | "create" | "patch" | "delete";

/** A watched kind: its store, resource, selectors, and what its cache keeps and indexes. */
export interface WatchedKind {
  key: keyof MiniClusterStores;
  rt: ResourceType;
  labelSelector?: string;
  fieldSelector?: string;
  transform?: Transform<KubeObject>;
  /** Extra indexes of its store, for the lookups a reconcile makes in it. */
  indexes?: Record<string, IndexFunc<KubeObject>>;
  /** How a cached child of this kind is compared with a desired one (written kinds only). */
  matches?: Matcher;
  /** Watched only where the API server serves the kind, asked again this often (see above). */
  whereServed?: { recheckMs: number };
}

/** What a row builds its dependents of one reconcile from. */
export interface DependentsInput {
  mc: DefaultedMiniCluster;
  desired: DesiredChildren;
  stores: MiniClusterStores;
  /** The workspace at the reconcile's sizes (workspace.ts), which the plan checks before wave 1. */
  workspace: Dependent<MiniClusterWorkspace>;
  io: { curve: CurveBuilders; recreates: RecreateBudget } & JobIo;
}

/** A row of the table: a kind the controller watches beside MiniClusters. */
export interface ChildKind extends WatchedKind {
  key: Exclude<keyof MiniClusterStores, "miniClusters">;
  /** The MiniClusters an event of this kind is about. */
  mapper(stores: MiniClusterStores): Mapper<KubeObject>;
  /** Its events wake the MiniCluster after `secondaryBatchMs`, together with the others of it. */
  batched: boolean;
  /** The wave its dependents are written in; none: observed only, never written. */
  wave?: number;
  /** The desired children of this kind the builders made (render and the bench write them). */
  desiredOf?(desired: DesiredChildren): KubeObject[];
  /** Its dependents in one reconcile, each with its drift policy (kinds with a wave). */
  dependents?(input: DependentsInput): Dependent[];
  /** What the MiniCluster controls of this kind and no dependent names is deleted. */
  pruned?: boolean;
  /** An object of this kind owned by a MiniCluster shows it was reconciled before (workspace.ts). */
  showsReconciled?: boolean;
  /** How cleanup deletes its objects (kinds with a wave; all are deleted). */
  cleanup?: {
    propagationPolicy?: "Background";
    /** Pods its objects run: cleanup waits for them before deleting the wave before this one. */
    runs?(stores: MiniClusterStores, mc: MiniCluster): KubeObject[];
  };
  /** Every verb the operator uses on the resource (the ClusterRole grants exactly these). */
  rbac: readonly Verb[];
}

/** Values are cached as digests (cache_view.ts): compare the desired values as digests too. */
const sameData: Matcher = (observed, desired) =>
  upToDate(dataView(observed as ConfigMap), dataView(desired as ConfigMap));

const byOwner = () => mapByControllerOwner(MINICLUSTER_KIND, "flux-framework.org");

/** An Event about a Job → the MiniCluster that controls that Job (as the Job cache shows it). */
function byJobOf(jobs: Store<Job>, owner: Mapper<KubeObject>): Mapper<KubeObject> {
  return (obj) => {
    const event = obj as Event;
    const o = event.involvedObject;
    if (o?.kind !== "Job" || !o.name) return [];
    const job = jobs.get(o.namespace ?? event.metadata?.namespace, o.name);
    return job && job.metadata?.uid === o.uid ? owner(job) : [];
  };
}

/** The Job's pods mount it: without it they could not start (or would read someone else's). */
const needed = <C extends KubeObject>(d: Dependent<C>): Dependent<C> => ({ ...d, needed: true });

/** What a dependent does: created by a create-only apply, read when its name is taken, deleted. */
const WRITTEN: readonly Verb[] = ["get", "list", "watch", "create", "patch", "delete"];

export const CHILD_KINDS: readonly ChildKind[] = [
  {
    key: "workspaces",
    rt: MiniClusterWorkspaces,
    labelSelector: MANAGED_SELECTOR,
    mapper: byOwner,
    batched: true,
    wave: 0,
    // Built from the reconcile's sizes, not from the desired children (workspace.ts).
    dependents: ({ workspace }) => [workspace],
    showsReconciled: true,
    cleanup: {},
    rbac: WRITTEN,
  },
  {
    key: "configMaps",
    rt: ConfigMaps,
    labelSelector: MANAGED_SELECTOR,
    transform: dataView as Transform<KubeObject>,
    matches: sameData,
    mapper: byOwner,
    batched: true,
    wave: 0,
    desiredOf: (d) => [d.configMap],
    dependents: ({ desired, stores }) => [
      needed(
        dependent(ConfigMaps, stores.configMaps, desired.configMap, applyWhenDifferent(sameData)),
      ),
    ],
    pruned: true,
    showsReconciled: true,
    cleanup: {},
    rbac: WRITTEN,
  },
  {
    key: "secrets",
    rt: Secrets,
    labelSelector: MANAGED_SELECTOR,
    transform: dataView as Transform<KubeObject>,
    matches: sameData,
    mapper: byOwner,
    batched: true,
    wave: 0,
    // Only the user's certificate: a generated one is made by the certificate builder, once.
    desiredOf: (d) => d.curveSecret ? [d.curveSecret] : [],
    dependents: ({ mc, desired, stores, io }) => [
      needed(
        desired.curveSecret
          ? dependent(Secrets, stores.secrets, desired.curveSecret, applyWhenDifferent(sameData))
          : generatedCurveSecret(mc, stores.secrets, io.curve),
      ),
    ],
    pruned: true,
    showsReconciled: true,
    cleanup: {},
    rbac: WRITTEN,
  },
  {
    key: "services",
    rt: Services,
    labelSelector: MANAGED_SELECTOR,
    matches: upToDate,
    mapper: byOwner,
    batched: true,
    wave: 0,
    desiredOf: (d) => d.services,
    dependents: ({ desired, stores }) =>
      desired.services.map((s) => dependent(Services, stores.services, s, serviceDrift(upToDate))),
    pruned: true,
    showsReconciled: true,
    cleanup: {},
    rbac: WRITTEN,
  },
  {
    // The gang (children/gang.ts): written only for a new Job or a ganged one (an unganged running
    // Job's pods cannot name it). A running Job does not need it: its other changes still apply
    // when the PodGroup cannot be written, which is reported.
    key: "podGroups",
    rt: PodGroups,
    labelSelector: MANAGED_SELECTOR,
    matches: upToDate,
    mapper: byOwner,
    batched: true,
    whereServed: { recheckMs: GANG_SUPPORT_TTL_MS },
    wave: 0,
    desiredOf: (d) => d.podGroup ? [d.podGroup] : [],
    dependents: ({ mc, desired, stores }) => {
      const running = ownJob(stores, mc);
      if (!desired.podGroup || (running && jobPodGroup(running) === undefined)) return [];
      const group = dependent(
        PodGroups,
        stores.podGroups,
        desired.podGroup,
        applyWhenDifferent<PodGroup>(upToDate),
      );
      return [running ? group : needed(group)];
    },
    cleanup: {},
    rbac: WRITTEN,
  },
  {
    key: "jobs",
    rt: Jobs,
    labelSelector: MANAGED_SELECTOR,
    transform: jobView as Transform<KubeObject>,
    matches: upToDate,
    mapper: byOwner,
    batched: true,
    wave: 1,
    desiredOf: (d) => [d.job],
    // A MiniCluster suspended from the start gets its Job when resumed: a queue controller would
    // admit a new Job at once (Kueue queues every new Job of a namespace with a LocalQueue named
    // `default`, whatever its labels), before the operator could suspend it (queue_workload.ts).
    dependents: ({ mc, desired, stores, io }) =>
      mc.spec.suspend === true && !ownJob(stores, mc)
        ? []
        : [dependent(Jobs, stores.jobs, desired.job, jobDrift(mc, io, upToDate))],
    showsReconciled: true,
    // Background: the Job goes at once (the Job controller starts nothing more for it) and the
    // garbage collector deletes its pods, which cleanup waits for. Foreground would leave the Job,
    // with the name, in place until the collector got round to it (never, where none runs), and a
    // MiniCluster created again under the same name would find its Job's name held.
    cleanup: { propagationPolicy: "Background", runs: podsOf },
    rbac: WRITTEN,
  },
  {
    // The services pod (written) and the Job's pods (watched for status, owned by the Job).
    key: "pods",
    rt: Pods,
    labelSelector: MANAGED_SELECTOR,
    transform: podView as Transform<KubeObject>,
    indexes: { [JOB_PODS_INDEX]: jobOfPod },
    matches: upToDate,
    // The Job's pods are owned by the Job, not the MiniCluster: they map through its label.
    mapper: () => mapByLabel(MINICLUSTER_LABEL),
    batched: true,
    wave: 1,
    desiredOf: (d) => d.servicesPod ? [d.servicesPod] : [],
    dependents: ({ mc, desired, stores, io }) =>
      desired.servicesPod
        ? [
          dependent(
            Pods,
            stores.pods,
            desired.servicesPod,
            servicesPodDrift(mc, io.recorder, io.recreates),
          ),
        ]
        : [],
    pruned: true,
    cleanup: { runs: (stores, mc) => stores.pods.byIndex("owner", mc.metadata?.uid ?? "") },
    rbac: WRITTEN,
  },
  {
    // The Job controller's FailedCreate Events on Jobs: why a Job is short of pods.
    key: "jobEvents",
    rt: Events,
    fieldSelector: FAILED_CREATE_SELECTOR,
    transform: failedCreateView as unknown as Transform<KubeObject>,
    indexes: { [INVOLVED_INDEX]: involvedUid },
    mapper: (stores) => byJobOf(stores.jobs, byOwner()),
    batched: true,
    // create: the operator's own Events about MiniClusters (events.ts).
    rbac: ["create", "list", "watch"],
  },
];

/** Every watched kind: the MiniClusters, then the table. */
export const WATCHED: readonly WatchedKind[] = [
  { key: "miniClusters", rt: MiniClusters },
  ...CHILD_KINDS,
];

/** The row of `key`. */
export function watched(key: keyof MiniClusterStores): WatchedKind {
  return WATCHED.find((w) => w.key === key)!;
}

/** Every store of the table, from `watch`. */
export function miniClusterStores(watch: WatchFn): MiniClusterStores {
  const stores: Partial<Record<keyof MiniClusterStores, Store<KubeObject>>> = {};
  for (
    const { key, rt, labelSelector, fieldSelector, transform, indexes, whereServed } of WATCHED
  ) {
    stores[key] = watch(rt, {
      ...(labelSelector ? { labelSelector } : {}),
      ...(fieldSelector ? { fieldSelector } : {}),
      transform,
      ...(indexes ? { indexes } : {}),
      ...(whereServed ? { whereServed } : {}),
    });
  }
  return stores as unknown as MiniClusterStores;
}

/** The written kinds, wave by wave (the rows of a wave in the table's order). */
export function childWaves(): ChildKind[][] {
  const waves: ChildKind[][] = [];
  for (const row of CHILD_KINDS) {
    if (row.wave === undefined) continue;
    (waves[row.wave] ??= []).push(row);
  }
  return waves.filter((w) => w !== undefined);
}

/** A desired child and the resource it is written through. */
export interface Child {
  kind: string;
  rt: ResourceType;
  object: ConfigMap | Secret | Service | Pod | PodGroup;
}

/**
 * Every desired child but the Job, in the order of the waves (the workspace and a generated
 * certificate are made apart: from the sizes, by the certificate builder). Render and the bench's
 * raw client write them in this order, the Job after them.
 */
export function childrenInOrder(d: DesiredChildren): Child[] {
  return childWaves().flat().filter((row) => row.rt !== Jobs).flatMap((row) =>
    (row.desiredOf?.(d) ?? []).map((object) => ({
      kind: object.kind ?? "",
      rt: row.rt,
      object: object as Child["object"],
    }))
  );
}

/** The generated CURVE certificate: created once, never updated. */
function generatedCurveSecret(
  mc: DefaultedMiniCluster,
  secrets: Store<Secret>,
  curve: CurveBuilders,
): Dependent<Secret> {
  return {
    resource: Secrets,
    store: secrets,
    namespace: mc.metadata?.namespace,
    name: curveSecretName(mc),
    desired: async () => owned(mc, withCurveDigest(curve.build(mc, await curve.generate(mc)))),
    drift: "createOnce",
  };
}
