/**
 * Wiring of the MiniCluster controller: the stores it reads (stores.ts), how their events find the
 * owning MiniCluster, which of its own events it ignores, and the reconciler it drives.
 *
 * Children map to their MiniCluster through the controller ownerReference; the Job's pods are owned
 * by the Job, not by the MiniCluster, so they map through the MiniCluster label instead, and the
 * Job controller's FailedCreate Events through the Job they are about.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Event, Pod, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import type { MiniClusterWorkspace } from "../../api/workspace.ts";
import type { ApiClient } from "../../runtime/api_client.ts";
import {
  type ControllerOptions,
  mapByControllerOwner,
  mapByLabel,
  type Mapper,
  type Secondary,
} from "../../runtime/controller.ts";
import { finalizerAddedOnly } from "../../runtime/finalizer.ts";
import { OwnWrites } from "../../runtime/own_writes.ts";
import type { KubeObject, Store, StoreEvent } from "../../runtime/store.ts";
import type { RuntimeLog } from "../../runtime/log.ts";
import { FINALIZER, MINICLUSTER_LABEL } from "./children/names.ts";
import { MINICLUSTER_KIND } from "./children/owner.ts";
import { EventRecorder } from "./events.ts";
import { MiniClusterReconciler, type MiniClusterReconcilerOptions } from "./reconciler.ts";
import { type MiniClusterStores, WATCHED } from "./stores.ts";
import { TIMING } from "./timing.ts";

export { MANAGED_SELECTOR, miniClusterStores, WATCHED, type WatchFn } from "./stores.ts";

export const CONTROLLER_NAME = "minicluster";

/** An Event about a Job → the MiniCluster that controls that Job (as the Job cache shows it). */
function byJobOf(jobs: Store<Job>, byOwner: Mapper<KubeObject>): Mapper<Event> {
  return (event) => {
    const o = event.involvedObject;
    if (o?.kind !== "Job" || !o.name) return [];
    const job = jobs.get(o.namespace ?? event.metadata?.namespace, o.name);
    return job && job.metadata?.uid === o.uid ? byOwner(job) : [];
  };
}

/**
 * Reconcile on spec and metadata changes, not on our own writes: a status-only update (same
 * generation, same labels/annotations/finalizers/deletion) carries nothing to act on, and neither
 * does our finalizer appearing on the same object (runtime/finalizer.ts: `finalizerAddedOnly`).
 */
export function interestingMiniClusterEvent(event: StoreEvent<MiniCluster>): boolean {
  if (event.type !== "updated" || !event.old) return true;
  const a = event.old.metadata ?? {};
  const b = event.object.metadata ?? {};
  return a.uid !== b.uid ||
    a.generation !== b.generation ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    (JSON.stringify(a.finalizers) !== JSON.stringify(b.finalizers) &&
      !finalizerAddedOnly(event, FINALIZER)) ||
    JSON.stringify(a.labels) !== JSON.stringify(b.labels) ||
    JSON.stringify(a.annotations) !== JSON.stringify(b.annotations);
}

export interface MiniClusterControllerOptions
  extends Omit<MiniClusterReconcilerOptions, "client" | "stores" | "recorder"> {
  recorder?: EventRecorder;
  /** Reported as the Events' reportingInstance. */
  instance?: string;
}

/**
 * The controller definition (for Manager.addController or a bare runtime Controller). The
 * reconciler reads the stores with this process's recent writes folded in and writes through a
 * client that records them (runtime/own_writes.ts); the primary store is read the same way.
 */
export function miniClusterController(
  client: ApiClient,
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
  // Own writes is a pacing mechanism: `--pacing-off=own-writes` reads the caches as they are.
  const ownWrites = client.pacing?.on("own-writes") === false ? undefined : new OwnWrites();
  if (ownWrites) client.pacing?.trackOwnWrites(ownWrites);
  const viewed = !ownWrites ? stores : Object.fromEntries(
    WATCHED.map(({ key, transform, indexes }) => [
      key,
      ownWrites.over(stores[key] as Store<KubeObject>, transform, indexes),
    ]),
  ) as unknown as MiniClusterStores;
  const reconciler = new MiniClusterReconciler({
    ...opts,
    client: ownWrites?.recording(client) ?? client,
    stores: viewed,
    recorder,
  });
  const byOwner = mapByControllerOwner(MINICLUSTER_KIND, "flux-framework.org");
  return {
    name: CONTROLLER_NAME,
    primary: viewed.miniClusters,
    filter: interestingMiniClusterEvent,
    // Children's and pods' events are batched: a new MiniCluster's own creates and its pods
    // turning Ready one by one cost one reconcile each burst, not one each.
    secondaries: ([
      { store: stores.workspaces as Store<MiniClusterWorkspace>, mapper: byOwner },
      { store: stores.configMaps as Store<ConfigMap>, mapper: byOwner },
      { store: stores.secrets as Store<Secret>, mapper: byOwner },
      { store: stores.services as Store<Service>, mapper: byOwner },
      { store: stores.jobs as Store<Job>, mapper: byOwner },
      { store: stores.pods as Store<Pod>, mapper: mapByLabel(MINICLUSTER_LABEL) },
      { store: stores.jobEvents as Store<Event>, mapper: byJobOf(stores.jobs, byOwner) },
    ] as Secondary[]).map((s) => ({ ...s, delayMs: TIMING.secondaryBatchMs })),
    reconciler,
  };
}
