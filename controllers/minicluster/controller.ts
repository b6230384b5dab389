/**
 * Wiring of the MiniCluster controller: the stores it reads, how their events find the owning
 * MiniCluster and whether they are batched (both per kind, in the table of child_kinds.ts), which
 * of its own events it ignores, and the reconciler it drives.
 */
import type { MiniCluster } from "../../api/mod.ts";
import type { ApiClient } from "../../runtime/client/api_client.ts";
import type { ControllerOptions, Secondary } from "../../runtime/controller/controller.ts";
import { finalizerAddedOnly } from "../../runtime/controller/finalizer.ts";
import { OwnWrites, type OwnWritesSwitch } from "../../runtime/watch/own_writes.ts";
import type { KubeObject, Store, StoreEvent } from "../../runtime/cache/store.ts";
import type { RuntimeLog } from "../../runtime/core/log.ts";
import { FINALIZER } from "./children/names.ts";
import { EventRecorder } from "./status/events.ts";
import { MiniClusterReconciler, type MiniClusterReconcilerOptions } from "./reconciler.ts";
import { CHILD_KINDS, type MiniClusterStores, WATCHED } from "./kinds/child_kinds.ts";
import { TIMING } from "./timing.ts";

export { miniClusterStores, WATCHED } from "./kinds/child_kinds.ts";
export { MANAGED_SELECTOR, type WatchFn, type WatchSpec } from "./kinds/stores.ts";

export const CONTROLLER_NAME = "minicluster";

/**
 * Reconcile on spec and metadata changes, not on our own writes: a status-only update (same
 * generation, same labels/annotations/finalizers/deletion) carries nothing to act on, and neither
 * does our finalizer appearing on the same object (runtime/controller/finalizer.ts: `finalizerAddedOnly`).
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
  /** Own writes' switch (`--pacing-off=own-writes`); on by default. */
  ownWrites?: OwnWritesSwitch;
  /** How long children's and pods' events are batched (`--child-event-batch`, timing.ts). */
  childEventBatchMs?: number;
}

/**
 * The controller definition (for Manager.addController or a bare runtime Controller). The
 * reconciler reads the stores with this process's recent writes folded in and writes through a
 * client that records them (runtime/watch/own_writes.ts); the primary store is read the same way.
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
  const ownWrites = opts.ownWrites?.on === false ? undefined : new OwnWrites();
  if (ownWrites) opts.ownWrites?.track?.(ownWrites);
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
  return {
    name: CONTROLLER_NAME,
    primary: viewed.miniClusters,
    filter: interestingMiniClusterEvent,
    // Children's and pods' events are batched: a new MiniCluster's own creates and its pods
    // turning Ready one by one cost one reconcile each burst, not one each.
    secondaries: CHILD_KINDS.map((row): Secondary => ({
      store: stores[row.key] as Store<KubeObject>,
      mapper: row.mapper(stores),
      ...(row.batched ? { delayMs: opts.childEventBatchMs ?? TIMING.secondaryBatchMs } : {}),
      ...(row.atOnce ? { atOnce: row.atOnce } : {}),
    })),
    reconciler,
  };
}
