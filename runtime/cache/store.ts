/**
 * The shared cache of one kind: what the watcher last saw, indexed, read-only to everybody else.
 *
 * Reconcilers read objects from here instead of the API server, so a reconcile costs no GET and
 * every controller sees the same snapshot. Objects are deep-frozen on the way in: a reconciler that
 * mutates a cached object would corrupt what every other reader sees, so it fails loudly instead.
 *
 * The watcher writes through `Cache` (the writer side); everything else gets the `Store` interface.
 * A relist swaps in complete new maps at once, so a reader never sees half of an old list and half
 * of a new one, and listeners receive the difference as ordinary added/updated/deleted events (a
 * delete missed while the watch was down still reaches the controller).
 */
import type { ObjectMeta, OwnerReference } from "kubernetes-types/meta/v1.d.ts";

/** Anything with Kubernetes object metadata. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

export type StoreEventType = "added" | "updated" | "deleted";

export interface StoreEvent<T> {
  type: StoreEventType;
  object: T;
  /** The previous version, for updates. */
  old?: T;
  /**
   * The object arrived with the first list of its scope (the cache filling at start-up), not as a
   * change: controllers give such events low priority, as controller-runtime does.
   */
  initialList?: boolean;
}

export type StoreListener<T> = (event: StoreEvent<T>) => void;

/** Computes the values an object is indexed under (none, one or several). */
export type IndexFunc<T> = (obj: T) => string[];

export interface ListSelector {
  namespace?: string;
  /** Equality label selector: every pair must match. */
  labels?: Record<string, string>;
}

/** The read side of a cache. */
export interface Store<T extends KubeObject> {
  /** What the cache holds (for logs and metrics labels), e.g. "configmaps". */
  readonly resource: string;
  get(namespace: string | undefined, name: string): T | undefined;
  getByKey(key: string): T | undefined;
  list(selector?: ListSelector): T[];
  /** Objects indexed under `value` by index `indexName` ("namespace", "owner", or an added one). */
  byIndex(indexName: string, value: string): T[];
  readonly size: number;
  /** Resolves when the first complete list has been loaded. */
  readonly ready: Promise<void>;
  readonly hasSynced: boolean;
  /** Calls `listener` on every change after it is added; returns the unsubscribe function. */
  subscribe(listener: StoreListener<T>): () => void;
}

/** "namespace/name", or "name" for cluster-scoped objects: the workqueue key of an object. */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? "";
  return ns ? `${ns}/${name}` : name;
}

/** The inverse of `objectKey`. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The ownerReference with `controller: true`, if any. */
export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((ref) => ref.controller === true);
}

/** Built-in indexes every store has. */
const NAMESPACE_INDEX = "namespace";
const OWNER_INDEX = "owner";

export const BUILTIN_INDEXES: Readonly<Record<string, IndexFunc<KubeObject>>> = {
  [NAMESPACE_INDEX]: (obj) => [obj.metadata?.namespace ?? ""],
  [OWNER_INDEX]: (obj) => {
    const uid = controllerOf(obj)?.uid;
    return uid ? [uid] : [];
  },
};

/** Freezes `value` and everything reachable from it; returns it. */
export function deepFreeze<V>(value: V): V {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  return value;
}

type IndexMaps<T> = Map<string, Map<string, Map<string, T>>>;

/** The writer side, owned by a watcher. */
export class Cache<T extends KubeObject> implements Store<T> {
  #items = new Map<string, T>();
  #indexes: IndexMaps<T>;
  #indexFuncs = new Map<string, IndexFunc<T>>();
  #listeners = new Set<StoreListener<T>>();
  #hasSynced = false;
  /** Namespaces (or "" for the whole cache) whose first list has been loaded. */
  #listed = new Set<string>();
  #resolveReady!: () => void;
  readonly ready: Promise<void>;

  readonly #quietUnchanged: boolean;

  /**
   * `opts.quietUnchanged`: an update that changes nothing but the resourceVersion reaches no
   * listener (for a cache of transformed objects, where most of what changes is dropped).
   */
  constructor(
    readonly resource: string,
    extraIndexes: Record<string, IndexFunc<T>> = {},
    opts: { quietUnchanged?: boolean } = {},
  ) {
    this.#quietUnchanged = opts.quietUnchanged ?? false;
    for (const [name, fn] of Object.entries(BUILTIN_INDEXES)) this.#indexFuncs.set(name, fn);
    for (const [name, fn] of Object.entries(extraIndexes)) this.#indexFuncs.set(name, fn);
    this.#indexes = this.#emptyIndexes();
    this.ready = new Promise((resolve) => this.#resolveReady = resolve);
  }

  get size(): number {
    return this.#items.size;
  }

  get hasSynced(): boolean {
    return this.#hasSynced;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.#items.get(namespace ? `${namespace}/${name}` : name);
  }

  getByKey(key: string): T | undefined {
    return this.#items.get(key);
  }

  list(selector: ListSelector = {}): T[] {
    const source = selector.namespace !== undefined
      ? this.#indexes.get(NAMESPACE_INDEX)!.get(selector.namespace)?.values() ?? []
      : this.#items.values();
    const labels = Object.entries(selector.labels ?? {});
    const out: T[] = [];
    for (const obj of source) {
      const have = obj.metadata?.labels ?? {};
      if (labels.every(([k, v]) => have[k] === v)) out.push(obj);
    }
    return out;
  }

  byIndex(indexName: string, value: string): T[] {
    const index = this.#indexes.get(indexName);
    if (!index) throw new Error(`store ${this.resource}: no index named "${indexName}"`);
    return [...(index.get(value)?.values() ?? [])];
  }

  subscribe(listener: StoreListener<T>): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Replaces the contents (or, with `namespace`, the contents of that namespace only: a watcher per
   * namespace shares one cache) with a complete list, emitting the difference. Marks the cache
   * synced when `synced` is true (the watcher says so once every namespace has listed).
   */
  replace(items: T[], opts: { namespace?: string; synced?: boolean } = {}): void {
    const scoped = (obj: T) =>
      opts.namespace === undefined || obj.metadata?.namespace === opts.namespace;
    const next = new Map<string, T>();
    for (const [key, obj] of this.#items) if (!scoped(obj)) next.set(key, obj);
    const incoming = new Map<string, T>();
    for (const item of items) incoming.set(objectKey(item), deepFreeze(item));

    const events: StoreEvent<T>[] = [];
    const scope = opts.namespace ?? "";
    const initialList = !this.#listed.has(scope) && !this.#listed.has("");
    this.#listed.add(scope);
    for (const [key, obj] of incoming) {
      const old = this.#items.get(key);
      if (!old) {
        events.push({ type: "added", object: obj, ...(initialList ? { initialList } : {}) });
      } else if (resourceVersionOf(old) !== resourceVersionOf(obj) && !this.#unchanged(old, obj)) {
        events.push({ type: "updated", object: obj, old });
      }
      next.set(key, obj);
    }
    for (const [key, obj] of this.#items) {
      if (scoped(obj) && !incoming.has(key)) events.push({ type: "deleted", object: obj });
    }

    // Build the new indexes aside, then swap both maps in one step.
    const indexes = this.#emptyIndexes();
    for (const [key, obj] of next) this.#indexInto(indexes, key, obj);
    this.#items = next;
    this.#indexes = indexes;
    if (opts.synced) this.markSynced();
    for (const event of events) this.#emit(event);
  }

  /** Applies one watch event. A DELETED event for an unknown object is ignored. */
  apply(type: "ADDED" | "MODIFIED" | "DELETED", item: T): void {
    const key = objectKey(item);
    const old = this.#items.get(key);
    if (type === "DELETED") {
      if (!old) return;
      this.#unindex(key, old);
      this.#items.delete(key);
      this.#emit({ type: "deleted", object: deepFreeze(item) });
      return;
    }
    const obj = deepFreeze(item);
    if (old) this.#unindex(key, old);
    this.#items.set(key, obj);
    this.#indexInto(this.#indexes, key, obj);
    // Only the resourceVersion moved (what changed was dropped by the watcher's transform, or was
    // managedFields): nothing a reader can see changed, so nobody is woken for it.
    if (old && this.#unchanged(old, obj)) return;
    this.#emit(old ? { type: "updated", object: obj, old } : { type: "added", object: obj });
  }

  #unchanged(old: T, obj: T): boolean {
    return this.#quietUnchanged && sameContent(old, obj);
  }

  markSynced(): void {
    if (this.#hasSynced) return;
    this.#hasSynced = true;
    this.#resolveReady();
  }

  #emptyIndexes(): IndexMaps<T> {
    const maps: IndexMaps<T> = new Map();
    for (const name of this.#indexFuncs.keys()) maps.set(name, new Map());
    return maps;
  }

  #indexInto(indexes: IndexMaps<T>, key: string, obj: T): void {
    for (const [name, fn] of this.#indexFuncs) {
      const index = indexes.get(name)!;
      for (const value of fn(obj)) {
        let bucket = index.get(value);
        if (!bucket) index.set(value, bucket = new Map());
        bucket.set(key, obj);
      }
    }
  }

  #unindex(key: string, obj: T): void {
    for (const [name, fn] of this.#indexFuncs) {
      const index = this.#indexes.get(name)!;
      for (const value of fn(obj)) {
        const bucket = index.get(value);
        bucket?.delete(key);
        if (bucket?.size === 0) index.delete(value);
      }
    }
  }

  #emit(event: StoreEvent<T>): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (e) {
        // A listener's bug must not stop the cache from delivering to the others.
        console.error(`store ${this.resource}: listener failed:`, e);
      }
    }
  }
}

function resourceVersionOf(obj: KubeObject): string | undefined {
  return obj.metadata?.resourceVersion;
}

/** Equal in everything but `metadata.resourceVersion`. */
function sameContent(a: KubeObject, b: KubeObject): boolean {
  if (a === b) return true;
  const { resourceVersion: _a, ...metaA } = a.metadata ?? {};
  const { resourceVersion: _b, ...metaB } = b.metadata ?? {};
  return deepEqual({ ...a, metadata: metaA }, { ...b, metadata: metaB });
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bs = b as unknown[];
    return a.length === bs.length && a.every((x, i) => deepEqual(x, bs[i]));
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const ka = Object.keys(ra).filter((k) => ra[k] !== undefined);
  const kb = Object.keys(rb).filter((k) => rb[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => deepEqual(ra[k], rb[k]));
}
