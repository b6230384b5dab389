/**
 * What this process wrote a moment ago, until the cache has caught up with it.
 *
 * The cache lags behind our own writes by one watch event. A reconcile that runs in that gap (the
 * Job we just applied triggers one at once) would see the old object, think it differs, and write
 * the same thing again — harmless, but a write, and the operator promises none for an unchanged
 * MiniCluster. So each write remembers the response, keyed by the resourceVersion the cache held
 * before it: while the cache still shows that version, the response is the better view; as soon as
 * the cache shows anything else (our write, or someone else's later one), the cache wins again and
 * the memo is dropped. Nothing here decides what to build; it only avoids redundant writes.
 */
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";

interface Obj {
  metadata?: ObjectMeta;
}

interface Entry {
  /** resourceVersion the cache held when we wrote ("" when the cache did not have the object). */
  before: string;
  after: Obj;
}

/** Entries older than this are dropped whatever the cache says (a lost watch event). */
const TTL_MS = 10_000;

export class RecentWrites {
  readonly #entries = new Map<string, Entry & { at: number }>();

  /** Remembers `after` as the result of writing over `before` (the cached object, if any). */
  record(kind: string, before: Obj | undefined, after: Obj): void {
    const key = keyOf(kind, after);
    if (!key) return;
    if (this.#entries.size > 1024) this.#purge();
    let beforeRv = before?.metadata?.resourceVersion ?? "";
    // A write on top of our own previous write (which the cache has not seen either): the cache
    // still shows what it showed before the first one.
    const previous = this.#entries.get(key);
    if (previous && previous.after.metadata?.resourceVersion === beforeRv) {
      beforeRv = previous.before;
    }
    this.#entries.set(key, { before: beforeRv, after, at: Date.now() });
  }

  /** Forgets an object (after deleting it). */
  forget(kind: string, obj: Obj): void {
    const key = keyOf(kind, obj);
    if (key) this.#entries.delete(key);
  }

  /** The freshest view of an object: our write if the cache has not seen it yet, else the cache. */
  view<T extends Obj>(
    kind: string,
    namespace: string | undefined,
    name: string,
    cached?: T,
  ): T | undefined {
    const key = `${kind}/${namespace ?? ""}/${name}`;
    const entry = this.#entries.get(key);
    if (!entry) return cached;
    const cachedRv = cached?.metadata?.resourceVersion ?? "";
    if (cachedRv === entry.before && Date.now() - entry.at < TTL_MS) return entry.after as T;
    this.#entries.delete(key);
    return cached;
  }

  #purge(): void {
    const now = Date.now();
    for (const [key, entry] of this.#entries) {
      if (now - entry.at >= TTL_MS) this.#entries.delete(key);
    }
  }
}

function keyOf(kind: string, obj: Obj): string | undefined {
  const name = obj.metadata?.name;
  if (!name) return undefined;
  return `${kind}/${obj.metadata?.namespace ?? ""}/${name}`;
}
