/**
 * Wiring of the MiniCluster controller: which kinds it watches, how their events find the owning
 * MiniCluster, and the reconciler it drives.
 *
 * The operator caches MiniClusters and only the objects it labelled itself
 * (app.kubernetes.io/managed-by=minicluster-operator): ConfigMaps, Secrets, Services, Jobs and the
 * pods (the Job's pods carry the label through the pod template). Children map to their MiniCluster
 * through the controller ownerReference; the Job's pods are owned by the Job, not by the
 * MiniCluster, so they map through the MiniCluster label instead.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Pod, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import type { KubeClient } from "../../runtime/client.ts";
import {
  type ControllerOptions,
  mapByControllerOwner,
  mapByLabel,
  type Secondary,
} from "../../runtime/controller.ts";
import {
  ConfigMaps,
  Jobs,
  MiniClusters,
  Pods,
  type ResourceType,
  Secrets,
  Services,
} from "../../runtime/resources.ts";
import type { KubeObject, Store, StoreEvent } from "../../runtime/store.ts";
import type { Transform } from "../../runtime/transforms.ts";
import type { RuntimeLog } from "../../runtime/watcher.ts";
import { dataView, jobView, podView } from "./cache_view.ts";
import {
  FINALIZER,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  MINICLUSTER_LABEL,
} from "./children/names.ts";
import { MINICLUSTER_KIND } from "./children/owner.ts";
import { EventRecorder } from "./events.ts";
import {
  MiniClusterReconciler,
  type MiniClusterReconcilerOptions,
  type MiniClusterStores,
} from "./reconciler.ts";

export const CONTROLLER_NAME = "minicluster";

/** How long the events of children and pods are batched before their MiniCluster is reconciled. */
export const SECONDARY_DELAY_MS = 1_000;

/** The label selector of every child watch: only what this operator created. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** Gives the shared store of a kind (the manager's `watch`, or a test's own watchers). */
export type WatchFn = <T extends KubeObject>(
  rt: ResourceType,
  spec?: { labelSelector?: string; transform?: Transform<KubeObject> },
) => Store<T>;

/**
 * The kinds the controller reads, the selectors it reads them with, and what their caches keep
 * (cache_view.ts; a watch function may ignore the transform: the reconciler reads whole objects
 * just as well).
 */
export const WATCHED: ReadonlyArray<
  {
    key: keyof MiniClusterStores;
    rt: ResourceType;
    labelSelector?: string;
    transform?: Transform<KubeObject>;
  }
> = [
  { key: "miniClusters", rt: MiniClusters },
  {
    key: "configMaps",
    rt: ConfigMaps,
    labelSelector: MANAGED_SELECTOR,
    transform: dataView as Transform<KubeObject>,
  },
  {
    key: "secrets",
    rt: Secrets,
    labelSelector: MANAGED_SELECTOR,
    transform: dataView as Transform<KubeObject>,
  },
  { key: "services", rt: Services, labelSelector: MANAGED_SELECTOR },
  {
    key: "jobs",
    rt: Jobs,
    labelSelector: MANAGED_SELECTOR,
    transform: jobView as Transform<KubeObject>,
  },
  {
    key: "pods",
    rt: Pods,
    labelSelector: MANAGED_SELECTOR,
    transform: podView as Transform<KubeObject>,
  },
];

export function miniClusterStores(watch: WatchFn): MiniClusterStores {
  const stores: Partial<Record<keyof MiniClusterStores, Store<KubeObject>>> = {};
  for (const { key, rt, labelSelector, transform } of WATCHED) {
    stores[key] = watch(rt, { ...(labelSelector ? { labelSelector } : {}), transform });
  }
  return stores as unknown as MiniClusterStores;
}

/**
 * Reconcile on spec and metadata changes, not on our own writes: a status-only update (same
 * generation, same labels/annotations/finalizers/deletion) carries nothing to act on, and neither
 * does our finalizer appearing on the same object — the reconcile that added it went on with the
 * object its patch returned (finalizer.ts), so running again would only repeat that work.
 */
export function interestingMiniClusterEvent(event: StoreEvent<MiniCluster>): boolean {
  if (event.type !== "updated" || !event.old) return true;
  const a = event.old.metadata ?? {};
  const b = event.object.metadata ?? {};
  return a.uid !== b.uid ||
    a.generation !== b.generation ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    (JSON.stringify(a.finalizers) !== JSON.stringify(b.finalizers) &&
      !onlyOurFinalizerAdded(a.finalizers, b.finalizers)) ||
    JSON.stringify(a.labels) !== JSON.stringify(b.labels) ||
    JSON.stringify(a.annotations) !== JSON.stringify(b.annotations);
}

function onlyOurFinalizerAdded(before: string[] = [], after: string[] = []): boolean {
  return !before.includes(FINALIZER) &&
    JSON.stringify([...before, FINALIZER]) === JSON.stringify(after);
}

export interface MiniClusterControllerOptions
  extends Omit<MiniClusterReconcilerOptions, "client" | "stores" | "recorder"> {
  recorder?: EventRecorder;
  /** Reported as the Events' reportingInstance. */
  instance?: string;
}

/** The controller definition (for Manager.addController or a bare runtime Controller). */
export function miniClusterController(
  client: KubeClient,
  stores: MiniClusterStores,
  opts: MiniClusterControllerOptions & { log?: RuntimeLog } = {},
):
  & Pick<
    ControllerOptions<MiniCluster>,
    "name" | "primary" | "secondaries" | "reconciler" | "filter"
  >
  & { reconciler: MiniClusterReconciler } {
  const log = opts.log;
  const recorder = opts.recorder ?? new EventRecorder(client, {
    instance: opts.instance,
    onError: (e) => log?.warn("could not write an Event", { error: String(e) }),
  });
  const reconciler = new MiniClusterReconciler({ ...opts, client, stores, recorder });
  const byOwner = mapByControllerOwner(MINICLUSTER_KIND, "flux-framework.org");
  return {
    name: CONTROLLER_NAME,
    primary: stores.miniClusters,
    filter: interestingMiniClusterEvent,
    // Children's and pods' events are batched for a second: a new MiniCluster's own creates and
    // its pods turning Ready one by one cost one reconcile each burst, not one each.
    secondaries: ([
      { store: stores.configMaps as Store<ConfigMap>, mapper: byOwner },
      { store: stores.secrets as Store<Secret>, mapper: byOwner },
      { store: stores.services as Store<Service>, mapper: byOwner },
      { store: stores.jobs as Store<Job>, mapper: byOwner },
      { store: stores.pods as Store<Pod>, mapper: mapByLabel(MINICLUSTER_LABEL) },
    ] as Secondary[]).map((s) => ({ ...s, delayMs: SECONDARY_DELAY_MS })),
    reconciler,
  };
}
