/**
 * The finalizer helper: an apply/cleanup split in the manner of kube-rs' `finalizer`.
 *
 * - A live object without our finalizer gets it first (before any dependent exists, so none can
 *   outlive a primary whose deletion skipped cleanup), then `apply` runs.
 * - An object being deleted that still has our finalizer runs `cleanup`; when cleanup says it is
 *   done, the finalizer is removed and the API server finishes the deletion.
 * - An object being deleted without our finalizer is none of our business any more.
 *
 * What `apply` is handed: the object, and the freshness fence its writes must pass. When the helper
 * has just added the finalizer, the object is the API's answer to that patch (live as of now) and
 * the fence is open; otherwise it is the cached view and the fence reads the live object before the
 * first write. Because the helper carries on with its own patch's answer, the watch event of that
 * patch brings nothing new: `addedOnly` tells a controller's event filter to drop it.
 *
 * Finalizer edits are merge patches carrying the resourceVersion they were computed from, so they
 * fail with a Conflict (and are retried on a fresh view) instead of dropping a finalizer another
 * controller added meanwhile.
 */
import type { ApiClient } from "../client/api_client.ts";
import { Action } from "./controller.ts";
import { isNotFound } from "../client/errors.ts";
import { FENCE_ON, type FenceSwitch, FreshnessFence } from "./freshness_fence.ts";
import type { ResourceType } from "../client/resources.ts";
import type { KubeObject, StoreEvent } from "../cache/store.ts";

/**
 * True when, of the finalizers, an update only added `name`: the reconcile that added it carried on
 * with its patch's answer (see `Finalizer.run`), so that change alone needs no reconcile.
 */
export function finalizerAddedOnly<T extends KubeObject>(
  event: StoreEvent<T>,
  name: string,
): boolean {
  const before = event.old?.metadata?.finalizers ?? [];
  const after = event.object.metadata?.finalizers ?? [];
  if (event.type !== "updated" || before.includes(name)) return false;
  return JSON.stringify([...before, name]) === JSON.stringify(after);
}

/** The two halves of a reconcile. */
export interface FinalizerHandlers<T> {
  /** Reconcile a live object (its finalizer is in place); write only after `fence.check()`. */
  apply(obj: T, fence: FreshnessFence): Promise<Action>;
  /**
   * Clean up an object being deleted: `done` when the finalizer may go, else the Action that
   * brings us back (a requeue while waiting; never block inside a reconcile).
   */
  cleanup(obj: T): Promise<{ done: true } | { done: false; action: Action }>;
}

export class Finalizer<T extends KubeObject> {
  constructor(
    readonly client: ApiClient,
    readonly resource: ResourceType,
    /** The finalizer's name, e.g. "example.com/cleanup". */
    readonly name: string,
    readonly fieldManager: string,
    /** The switch of the fence `apply` is handed for a cached view. */
    readonly fence: FenceSwitch = FENCE_ON,
  ) {}

  has(obj: T): boolean {
    return obj.metadata?.finalizers?.includes(this.name) ?? false;
  }

  /** Runs `apply` or `cleanup` as described above. */
  async run(obj: T, handlers: FinalizerHandlers<T>): Promise<Action> {
    if (obj.metadata?.deletionTimestamp) {
      if (!this.has(obj)) return Action.awaitChange();
      const result = await handlers.cleanup(obj);
      if (!result.done) return result.action;
      await this.#patch(obj, (obj.metadata.finalizers ?? []).filter((f) => f !== this.name));
      return Action.awaitChange();
    }
    if (this.has(obj)) {
      return await handlers.apply(
        obj,
        FreshnessFence.reading(this.client, this.resource, obj, this.fence),
      );
    }
    const patched = await this.#patch(obj, [...(obj.metadata?.finalizers ?? []), this.name]);
    if (!patched) return Action.awaitChange(); // deleted meanwhile
    return await handlers.apply(patched, FreshnessFence.live());
  }

  /** See `finalizerAddedOnly`. */
  addedOnly(event: StoreEvent<T>): boolean {
    return finalizerAddedOnly(event, this.name);
  }

  /**
   * Sets metadata.finalizers, guarded by the resourceVersion it was computed from. Undefined when
   * the object (or its CRD) is already gone, which for a removal is success.
   */
  async #patch(obj: T, finalizers: string[]): Promise<T | undefined> {
    const { namespace, name, resourceVersion } = obj.metadata ?? {};
    try {
      return await this.client.patch<T>(
        this.resource,
        namespace,
        name!,
        { metadata: { finalizers, resourceVersion } },
        "merge",
        { fieldManager: this.fieldManager },
      );
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }
}
