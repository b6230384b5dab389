/**
 * Every kind the MiniCluster controller watches beside MiniClusters, one row each, and the only
 * place a kind is declared: its object type and store (the types of `MiniClusterStores` and
 * `DesiredChildren` are derived from the rows), how it is watched (resource, selector), what its
 * cache keeps (transform, indexes), its builder (the desired children of a reconcile), its one
 * matcher (how a cached child is compared with a desired one; the two go together, since a cache
 * that keeps digests of values must be compared as digests: every dependent of the row compares
 * with it), which MiniCluster its events wake and whether they are batched, the wave its dependents
 * are written in with their drift policies, whether it is pruned, how cleanup deletes it, and the
 * RBAC verbs the operator uses on it. Everything that handles "each kind" reads this table: the
 * stores (`miniClusterStores`), the builders' run (desired.ts), the controller's secondaries
 * (controller.ts), the dependents' plan (dependents.ts), the cleanup (cleanup.ts), whether a
 * MiniCluster is new (workspace.ts), the render order (render.ts, the bench's raw client), the
 * ClusterRole (rbac_rules.ts, written to deploy/cluster-role.yaml by hack/cluster-role.ts), the
 * bench's observer and the conformance run.
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
 * store is synced and empty and it asks again every `recheckMs`, runtime/watch/watcher.ts) and nothing
 * of the kind is desired (the gang probe builds the Job unganged, gang_support.ts). Cleanup runs the waves in reverse, as the Java Operator SDK deletes dependents: the
 * pod-running kinds first (the Job in the background, so its name is free at once), and the
 * objects they mount only once their pods are gone.
 *
 * Adding a kind is a row here and a builder in children/; docs/architecture.md ("Adding a child
 * kind") shows it.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Event, Pod, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { DefaultedMiniCluster, MiniCluster } from "../../../api/mod.ts";
import { MiniClusters } from "../../../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../../api/workspace.ts";
import {
  mapByControllerOwner,
  mapByLabel,
  type Mapper,
} from "../../../runtime/controller/controller.ts";
import {
  applyWhenDifferent,
  type Dependent,
  dependent,
  type DriftPolicy,
} from "../../../runtime/controller/dependents.ts";
import {
  ConfigMaps,
  Events,
  Jobs,
  Pods,
  type ResourceType,
  Secrets,
  Services,
} from "../../../runtime/client/resources.ts";
import type { IndexFunc, KubeObject, Store } from "../../../runtime/cache/store.ts";
import type { Transform } from "../../../runtime/cache/transforms.ts";
import { dataView, jobView, podView } from "./cache_view.ts";
import { buildCurveSecret } from "../children/curve.ts";
import { buildEntrypointConfigMap } from "../children/entrypoint.ts";
import { buildPodGroup, jobPodGroup, type PodGroup } from "../children/gang.ts";
import { buildJob, type JobOptions } from "../children/job.ts";
import { curveSecretName, MINICLUSTER_LABEL } from "../children/names.ts";
import { MINICLUSTER_KIND } from "../children/owner.ts";
import { buildPortServices } from "../children/port_services.ts";
import { buildHeadlessService } from "../children/service.ts";
import { buildServicesPod } from "../children/services_pod.ts";
import type { Sizing } from "../children/sizing.ts";
import { GANG_SUPPORT_TTL_MS } from "../gang/gang_support.ts";
import { PodGroups } from "../gang/pod_group.ts";
import type { CurveBuilders } from "../policy/curve_builders.ts";
import { withCurveDigest } from "../policy/curve_integrity.ts";
import type { GivenCurveCert } from "../policy/curve_source.ts";
import { FAILED_CREATE_SELECTOR, failedCreateView } from "../status/create_failures.ts";
import { drainGraceExpired } from "../status/drain_condition.ts";
import { upToDate } from "./diff.ts";
import { jobDrift, type JobIo } from "./job_drift.ts";
import { owned, ownedChild, ownedJob } from "./owned_children.ts";
import { serviceDrift } from "./service_drift.ts";
import { type RecreateBudget, servicesPodDrift, servicesPodMatches } from "./services_pod_drift.ts";
import {
  INVOLVED_INDEX,
  involvedUid,
  JOB_PODS_INDEX,
  jobOfPod,
  MANAGED_SELECTOR,
  type Matcher,
  ownJob,
  podsOf,
  type WatchFn,
} from "./stores.ts";

/** An RBAC verb the operator uses. */
export type Verb = "get" | "list" | "watch" | "create" | "patch" | "delete";

/** A watched kind: its store, resource, selectors, and what its cache keeps and indexes. */
export interface WatchedKind<K extends string = StoreKey> {
  key: K;
  rt: ResourceType;
  labelSelector?: string;
  fieldSelector?: string;
  transform?: Transform<KubeObject>;
  /** Extra indexes of its store, for the lookups a reconcile makes in it. */
  indexes?: Record<string, IndexFunc<KubeObject>>;
  /** Watched only where the API server serves the kind, asked again this often (see above). */
  whereServed?: { recheckMs: number };
}

/** What the builders build a MiniCluster's children from (desired.ts). */
export interface BuildInput {
  mc: DefaultedMiniCluster;
  /**
   * `mc` as the brokers of its running Job see it (in the running Job's subdomain, desired.ts):
   * what the brokers reach is built from this, the Job itself from `mc`.
   */
  brokers: DefaultedMiniCluster;
  sizing: Sizing;
  /** The user's CURVE certificate, already checked (none: a generated one is made elsewhere). */
  given?: GivenCurveCert;
  /** The Job's gang, suspension and queue as the reconciler decided them. */
  job: JobOptions;
}

/**
 * A kind's desired children: the field of `DesiredChildren` they are in, and the builder that makes
 * them, owned and hashed (owned_children.ts); undefined: none of the kind this time.
 */
export interface Builder<F extends string, V> {
  field: F;
  build(input: BuildInput): V;
}

/** What a row's dependents are made with: its own resource, store and matcher. */
export interface KindDependents<T extends KubeObject> {
  matches: Matcher;
  /** A dependent of the kind, with `drift` (default: applied when `matches` says it differs). */
  of(desired: T, drift?: DriftPolicy<T>): Dependent<T>;
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

/**
 * A row of the table: a kind the controller watches beside MiniClusters, whose objects are `T` in
 * the store `K`, built (when it has a builder) into the field `F` of the desired children as `V`.
 */
export interface ChildKind<
  K extends string = ChildKey,
  T extends KubeObject = KubeObject,
  F extends string = string,
  V = unknown,
> extends WatchedKind<K> {
  /** The MiniClusters an event of this kind is about. */
  mapper(stores: MiniClusterStores): Mapper<KubeObject>;
  /** Its events wake the MiniCluster after `secondaryBatchMs`, together with the others of it. */
  batched: boolean;
  /** Events of objects this accepts wake it at once, batched or not (what may soon be gone). */
  atOnce?: (obj: KubeObject) => boolean;
  /** Its desired children in one reconcile (render and the bench write them too). */
  builder?: Builder<F, V>;
  /** How a cached child of this kind is compared with a desired one (written kinds only). */
  matches?: Matcher;
  /** The wave its dependents are written in; none: observed only, never written. */
  wave?: number;
  /** Its dependents in one reconcile, each with its drift policy (kinds with a wave). */
  dependents?(input: DependentsInput, kind: KindDependents<T>): Dependent[];
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
  /** Why: the comment on its rule in the ClusterRole (rbac_rules.ts). */
  rbacReason: string;
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

/** What WRITTEN is for; the ClusterRole's header says what a dependent does (rbac_rules.ts). */
const AS_DEPENDENT = "a dependent";

// Each row is declared with its type, from which the table's types are derived (below).

const workspaces: ChildKind<"workspaces", MiniClusterWorkspace, never, never> = {
  key: "workspaces",
  rt: MiniClusterWorkspaces,
  labelSelector: MANAGED_SELECTOR,
  mapper: byOwner,
  batched: true,
  wave: 0,
  // Built from the reconcile's sizes, not by a builder (workspace.ts).
  dependents: ({ workspace }) => [workspace],
  showsReconciled: true,
  cleanup: {},
  rbac: WRITTEN,
  rbacReason: "The workspace (workspace.ts): watched, created once by a create-only server-side " +
    "apply (create and patch), read from the API when that apply finds its name taken, deleted " +
    "on cleanup. Never updated; no status.",
};

const configMaps: ChildKind<"configMaps", ConfigMap, "configMap", ConfigMap> = {
  key: "configMaps",
  rt: ConfigMaps,
  labelSelector: MANAGED_SELECTOR,
  transform: dataView as Transform<KubeObject>,
  builder: {
    field: "configMap",
    build: ({ mc, brokers, sizing }) => ownedChild(mc, buildEntrypointConfigMap(brokers, sizing)),
  },
  matches: sameData,
  mapper: byOwner,
  batched: true,
  wave: 0,
  dependents: ({ desired }, kind) => [needed(kind.of(desired.configMap))],
  pruned: true,
  showsReconciled: true,
  cleanup: {},
  rbac: WRITTEN,
  rbacReason: `The entrypoint, ${AS_DEPENDENT}; pruned when the spec drops it (and an older ` +
    `version's workspace ConfigMap, read from the cache, is deleted once migrated).`,
};

const secrets: ChildKind<"secrets", Secret, "curveSecret", Secret | undefined> = {
  key: "secrets",
  rt: Secrets,
  labelSelector: MANAGED_SELECTOR,
  transform: dataView as Transform<KubeObject>,
  // Only the user's certificate: a generated one is made by the certificate builder, once.
  builder: {
    field: "curveSecret",
    build: ({ mc, given }) => given ? ownedChild(mc, buildCurveSecret(mc, given.text)) : undefined,
  },
  matches: sameData,
  mapper: byOwner,
  batched: true,
  wave: 0,
  dependents: ({ mc, desired, stores, io }, kind) => [
    needed(
      desired.curveSecret
        ? kind.of(desired.curveSecret)
        : generatedCurveSecret(mc, stores.secrets, io.curve),
    ),
  ],
  pruned: true,
  showsReconciled: true,
  cleanup: {},
  rbac: WRITTEN,
  rbacReason: `The generated CURVE certificate (created once) or the user's certificate, ` +
    `${AS_DEPENDENT}; pruned when the spec drops it.`,
};

const services: ChildKind<"services", Service, "services", Service[]> = {
  key: "services",
  rt: Services,
  labelSelector: MANAGED_SELECTOR,
  // The headless (or minimal) Service first, then one per non-Flux container with ports.
  builder: {
    field: "services",
    build: ({ mc, brokers }) =>
      [buildHeadlessService(brokers), ...buildPortServices(brokers)].map((s) => ownedChild(mc, s)),
  },
  matches: upToDate,
  mapper: byOwner,
  batched: true,
  wave: 0,
  dependents: ({ desired }, kind) =>
    desired.services.map((s) => kind.of(s, serviceDrift(kind.matches))),
  pruned: true,
  showsReconciled: true,
  cleanup: {},
  rbac: WRITTEN,
  rbacReason: `The headless and per-container Services, each ${AS_DEPENDENT}; re-created when ` +
    `immutable fields changed (service_drift.ts), pruned when the spec drops them.`,
};

const podGroups: ChildKind<"podGroups", PodGroup, "podGroup", PodGroup | undefined> = {
  // The gang (children/gang.ts): written only for a new Job or a ganged one (an unganged running
  // Job's pods cannot name it). A running Job does not need it: its other changes still apply
  // when the PodGroup cannot be written, which is reported.
  key: "podGroups",
  rt: PodGroups,
  labelSelector: MANAGED_SELECTOR,
  // spec.gang, where the API server serves it; owned by its builder, without a desired hash.
  builder: {
    field: "podGroup",
    build: ({ mc, sizing, job }) => job.unganged ? undefined : buildPodGroup(mc, sizing),
  },
  matches: upToDate,
  mapper: byOwner,
  batched: true,
  whereServed: { recheckMs: GANG_SUPPORT_TTL_MS },
  wave: 0,
  dependents: ({ mc, desired, stores }, kind) => {
    const running = ownJob(stores, mc);
    if (!desired.podGroup || (running && jobPodGroup(running) === undefined)) return [];
    const group = kind.of(desired.podGroup);
    return [running ? group : needed(group)];
  },
  cleanup: {},
  rbac: WRITTEN,
  rbacReason: `Gang scheduling (spec.gang): the gang's PodGroup, ${AS_DEPENDENT}; watched only ` +
    `where the API server serves it (a list of at most one also tells the gang probe whether ` +
    `PodGroups are served, gang_support.ts).`,
};

const jobs: ChildKind<"jobs", Job, "job", Job> = {
  key: "jobs",
  rt: Jobs,
  labelSelector: MANAGED_SELECTOR,
  transform: jobView as Transform<KubeObject>,
  builder: {
    field: "job",
    build: ({ mc, sizing, job }) => ownedJob(mc, buildJob(mc, sizing, job)),
  },
  matches: upToDate,
  mapper: byOwner,
  batched: true,
  wave: 1,
  // A MiniCluster suspended from the start gets its Job when resumed: a queue controller would
  // admit a new Job at once (Kueue queues every new Job of a namespace with a LocalQueue named
  // `default`, whatever its labels), before the operator could suspend it (queue_workload.ts).
  dependents: ({ mc, desired, stores, io }, kind) =>
    mc.spec.suspend === true && !ownJob(stores, mc)
      ? []
      : [kind.of(desired.job, jobDrift(mc, io, kind.matches))],
  showsReconciled: true,
  // Background: the Job goes at once (the Job controller starts nothing more for it) and the
  // garbage collector deletes its pods, which cleanup waits for. Foreground would leave the Job,
  // with the name, in place until the collector got round to it (never, where none runs), and a
  // MiniCluster created again under the same name would find its Job's name held.
  cleanup: { propagationPolicy: "Background", runs: podsOf },
  rbac: WRITTEN,
  rbacReason: `The Indexed Job, ${AS_DEPENDENT}; a running Job takes only what it accepts, by ` +
    `merge patch (job_drift.ts).`,
};

const pods: ChildKind<"pods", Pod, "servicesPod", Pod | undefined> = {
  // The services pod (written) and the Job's pods (watched for status, owned by the Job).
  key: "pods",
  rt: Pods,
  labelSelector: MANAGED_SELECTOR,
  transform: podView as Transform<KubeObject>,
  indexes: { [JOB_PODS_INDEX]: jobOfPod },
  builder: {
    field: "servicesPod",
    build: ({ mc, brokers }) => {
      const pod = buildServicesPod(brokers);
      return pod ? ownedChild(mc, pod) : undefined;
    },
  },
  matches: servicesPodMatches as Matcher,
  // The Job's pods are owned by the Job, not the MiniCluster: they map through its label.
  mapper: () => mapByLabel(MINICLUSTER_LABEL),
  batched: true,
  // A removed broker's container that ended after its drain cancelled jobs: its pod is deleted
  // right after, and the Draining condition must see it first (drain_condition.ts).
  atOnce: (pod) =>
    ((pod as Pod).status?.containerStatuses ?? []).some((cs) => drainGraceExpired(cs)),
  wave: 1,
  dependents: ({ mc, desired, io }, kind) =>
    desired.servicesPod
      ? [
        kind.of(desired.servicesPod, servicesPodDrift(mc, io.recorder, io.recreates, kind.matches)),
      ]
      : [],
  pruned: true,
  cleanup: { runs: (stores, mc) => stores.pods.byIndex("owner", mc.metadata?.uid ?? "") },
  rbac: WRITTEN,
  rbacReason: `The services pod, ${AS_DEPENDENT}; re-created when its desired spec changed ` +
    `(services_pod_drift.ts). The Job's pods are watched for status and deleted on cleanup.`,
};

const jobEvents: ChildKind<"jobEvents", Event, never, never> = {
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
  rbacReason: "Events about MiniClusters (events.ts writes core/v1 Events). list/watch: the Job " +
    "controller's FailedCreate Events on Jobs, field-selected by the API server " +
    "(involvedObject.kind=Job, reason=FailedCreate), say why a Job is short of pods " +
    "(create_failures.ts).",
};

/** The rows, in the order of the waves within a wave (each row's own type kept). */
const ROWS = [workspaces, configMaps, secrets, services, podGroups, jobs, pods, jobEvents] as const;

type Row = typeof ROWS[number];
/** The store of a row. */
export type ChildKey = Row["key"];
type StoreKey = ChildKey | "miniClusters";
type ObjectOf<R> = R extends ChildKind<string, infer T, string, unknown> ? T : never;
type FieldOf<R> = R extends ChildKind<string, KubeObject, infer F, unknown> ? F : never;
type BuiltOf<R> = R extends ChildKind<string, KubeObject, string, infer V> ? V : never;
type Built = { [R in Row as FieldOf<R>]: BuiltOf<R> };

/** The caches the reconciler reads (the operator's label-selected watches): one per row. */
export type MiniClusterStores =
  & { miniClusters: Store<MiniCluster> }
  & { [R in Row as R["key"]]: Store<ObjectOf<R>> };

/**
 * Every child a MiniCluster should have, by the builders of the rows (desired.ts): a field per row
 * with a builder, optional where the builder may make none.
 */
export type DesiredChildren =
  & { [F in keyof Built as undefined extends Built[F] ? never : F]: Built[F] }
  & { [F in keyof Built as undefined extends Built[F] ? F : never]?: Exclude<Built[F], undefined> };

export const CHILD_KINDS: readonly ChildKind[] = ROWS;

/** Every watched kind: the MiniClusters, then the table. */
export const WATCHED: readonly WatchedKind[] = [
  { key: "miniClusters", rt: MiniClusters },
  ...CHILD_KINDS,
];

/** The row of `key`. */
export function watched(key: StoreKey): WatchedKind {
  return WATCHED.find((w) => w.key === key)!;
}

/** Every store of the table, from `watch`. */
export function miniClusterStores(watch: WatchFn): MiniClusterStores {
  const stores: Partial<Record<StoreKey, Store<KubeObject>>> = {};
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

/** The dependents of `row` in one reconcile, made with its resource, store and matcher. */
export function dependentsOf(row: ChildKind, input: DependentsInput): Dependent[] {
  if (!row.dependents) return [];
  const store = input.stores[row.key] as Store<KubeObject>;
  const matches = row.matches ?? upToDate;
  return row.dependents(input, {
    matches,
    of: (desired, drift) => dependent(row.rt, store, desired, drift ?? applyWhenDifferent(matches)),
  });
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

/** The desired children `row` built, as a list. */
export function builtBy(row: ChildKind, d: DesiredChildren): KubeObject[] {
  if (!row.builder) return [];
  const built = (d as Record<string, unknown>)[row.builder.field] as
    | KubeObject
    | KubeObject[]
    | undefined;
  return built === undefined ? [] : Array.isArray(built) ? built : [built];
}

/** A desired child and the resource it is written through. */
export interface Child {
  kind: string;
  rt: ResourceType;
  object: KubeObject;
}

/**
 * Every desired child but the Job, in the order of the waves (the workspace and a generated
 * certificate are made apart: from the sizes, by the certificate builder). Render and the bench's
 * raw client write them in this order, the Job after them.
 */
export function childrenInOrder(d: DesiredChildren): Child[] {
  return childWaves().flat().filter((row) => row.rt !== Jobs).flatMap((row) =>
    builtBy(row, d).map((object) => ({ kind: object.kind ?? "", rt: row.rt, object }))
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
