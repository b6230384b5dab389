/**
 * Cache transforms: what a watcher keeps of each object before it enters the store.
 *
 * A store holds every object of its kind for the life of the process, so whatever the reconcilers
 * never read is memory spent for nothing (like controller-runtime's TransformFunc or kube-rs's
 * reflector modifiers). `managedFields` is the largest such part of nearly every object: the server
 * keeps one entry per field manager listing every field it owns, often more bytes than the object.
 *
 * A transform must be pure and keep everything a reader decides on: the store compares transformed
 * objects, and an update that leaves the transformed object unchanged (only its resourceVersion
 * moved) reaches no listener (see `Cache.apply`).
 */
import type { KubeObject } from "./store.ts";

/** Maps a freshly received object to what the store keeps of it. */
export type Transform<T> = (obj: T) => T;

/** The object without `metadata.managedFields` (a shallow copy; the input is not changed). */
export function dropManagedFields<T extends KubeObject>(obj: T): T {
  const meta = obj.metadata;
  if (!meta || meta.managedFields === undefined) return obj;
  const { managedFields: _, ...rest } = meta;
  return { ...obj, metadata: rest };
}
