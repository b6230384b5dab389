/**
 * Read-your-own-writes for the caches, as the Java Operator SDK keeps recent writes in its informer
 * cache.
 *
 * A cache lags behind the process's own writes by one watch event. A reconcile that runs in that gap
 * (the Job just created wakes one at once) would see the old object, think it differs, and write
 * the same thing again — harmless, but a write, and a controller should make none for an unchanged
 * object. So the writing client (`recording`) remembers each successful write's answer, keyed by
 * the resourceVersion its cache held before; a store seen through `over` shows that answer while the
 * cache still holds that version. As soon as the cache shows anything else (our write, or someone
 * else's later one) the cache wins again and the memory is dropped; a lost event is outlived by a
 * TTL. A delete forgets the object. Nothing here decides what to build; it only avoids redundant
 * writes.
 *
 * Reads by name, `list` and the built-in indexes ("namespace", "owner") all see recent writes: a
 * cleanup that lists what an owner has must find the child created a moment ago too.
 */
import type {
  ApiClient,
  ApplyOptions,
  DeleteOptions,
  PatchOptions,
  WriteOptions,
} from "../client/api_client.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import { resourceName, type ResourceType } from "../client/resources.ts";
import {
  BUILTIN_INDEXES,
  deepFreeze,
  type IndexFunc,
  type KubeObject,
  type ListSelector,
  objectKey,
  type Store,
} from "../cache/store.ts";
import { dropManagedFields, type Transform } from "../cache/transforms.ts";

/** Remembered writes older than this are dropped whatever the cache says (a lost watch event). */
export const OWN_WRITE_TTL_MS = 10_000;

/**
 * Own writes' switch, handed to it where a program makes its controllers (`--pacing-off=own-writes`
 * turns it off: the caches are read as they are), and where an overlay's size is reported.
 */
export interface OwnWritesSwitch {
  readonly on: boolean;
  /** Told of each overlay made, whose `entries` /metrics then shows. */
  readonly track?: (source: { readonly entries: number }) => void;
}

interface Entry {
  /** resourceVersion the cache held when we wrote ("" when it did not have the object). */
  before: string;
  /** The write's answer, as the cache would keep it. */
  after: KubeObject;
  at: number;
}

interface Tracked {
  store: Store<KubeObject>;
  view: Transform<KubeObject>;
}

export class OwnWrites {
  readonly #clock: Clock;
  /** By resource name ("jobs.batch"): the cache of that kind and what it keeps of an object. */
  readonly #tracked = new Map<string, Tracked>();
  /** By resource name, then by "namespace/name". */
  readonly #entries = new Map<string, Map<string, Entry>>();

  constructor(opts: { clock?: Clock } = {}) {
    this.#clock = opts.clock ?? systemClock;
  }

  /** Writes remembered now, of every kind (some may be past their TTL until next looked at). */
  get entries(): number {
    let n = 0;
    for (const entries of this.#entries.values()) n += entries.size;
    return n;
  }

  /**
   * The store with this process's recent writes folded in. `transform` is what the store's watcher
   * keeps of an object: answers are kept the same way, so readers see one shape.
   */
  over<T extends KubeObject>(
    store: Store<T>,
    transform?: Transform<T>,
    indexes: Record<string, IndexFunc<T>> = {},
  ): Store<T> {
    const view = (obj: KubeObject) =>
      deepFreeze(transform ? transform(dropManagedFields(obj) as T) : dropManagedFields(obj));
    this.#tracked.set(store.resource, { store, view } as Tracked);
    const resource = store.resource;
    const get = (key: string) => this.#view(resource, key, store.getByKey(key));
    return {
      resource,
      get: (ns, name) => get(ns ? `${ns}/${name}` : name) as T | undefined,
      getByKey: (key) => get(key) as T | undefined,
      list: (selector) =>
        this.#fold(store, store.list(selector), (o) => selects(selector, o)) as T[],
      byIndex: (index, value) => {
        const cached = store.byIndex(index, value);
        const fn = (BUILTIN_INDEXES[index] ?? indexes[index]) as IndexFunc<KubeObject> | undefined;
        return fn ? this.#fold(store, cached, (o) => fn(o).includes(value)) as T[] : cached;
      },
      get size() {
        return store.size;
      },
      ready: store.ready,
      get hasSynced() {
        return store.hasSynced;
      },
      subscribe: (listener) => store.subscribe(listener),
    };
  }

  /** `client`, remembering the answers of its writes to tracked kinds and forgetting deletes. */
  recording(client: ApiClient): ApiClient {
    const write = async <T>(rt: ResourceType, obj: unknown, send: () => Promise<T>) => {
      const resource = resourceName(rt);
      const key = objectKey(obj as KubeObject);
      const before = this.#tracked.has(resource) ? this.#current(resource, key) : undefined;
      const after = await send();
      this.#record(resource, key, before, after as KubeObject);
      return after;
    };
    return {
      get: (rt, ns, name, opts) => client.get(rt, ns, name, opts),
      list: (rt, opts) => client.list(rt, opts),
      listEach: (rt, onItem, opts) => client.listEach(rt, onItem, opts),
      watch: (rt, opts) => client.watch(rt, opts),
      create: <T>(rt: ResourceType, obj: T, opts?: WriteOptions) =>
        write(rt, obj, () => client.create(rt, obj, opts)),
      replace: <T>(rt: ResourceType, obj: T, opts?: PatchOptions) =>
        write(rt, obj, () => client.replace(rt, obj, opts)),
      apply: <T>(rt: ResourceType, obj: T, opts: ApplyOptions) =>
        write(rt, obj, () => client.apply(rt, obj, opts)),
      patch: <T>(
        rt: ResourceType,
        namespace: string | undefined,
        name: string,
        patch: unknown,
        type: "merge" | "json" | "strategic",
        opts?: PatchOptions,
      ) =>
        write(
          rt,
          { metadata: { namespace, name } },
          () => client.patch<T>(rt, namespace, name, patch, type, opts),
        ),
      delete: async (rt, namespace, name, opts?: DeleteOptions) => {
        try {
          return await client.delete(rt, namespace, name, opts);
        } finally {
          this.#entries.get(resourceName(rt))?.delete(namespace ? `${namespace}/${name}` : name);
        }
      },
    };
  }

  /** `cached` with our recent writes of `store`'s kind in place of (or beside) what they replace. */
  #fold<T extends KubeObject>(
    store: Store<T>,
    cached: T[],
    matches: (obj: KubeObject) => boolean,
  ): KubeObject[] {
    const entries = this.#entries.get(store.resource);
    if (!entries?.size) return cached;
    const out = new Map<string, KubeObject>(cached.map((o) => [objectKey(o), o]));
    for (const key of [...entries.keys()]) {
      const seen = this.#view(store.resource, key, store.getByKey(key));
      if (seen === undefined || seen !== entries.get(key)?.after) continue;
      if (matches(seen)) out.set(key, seen);
      else out.delete(key);
    }
    return [...out.values()];
  }

  /** What a reader of the tracked store sees now (our write, or the cache). */
  #current(resource: string, key: string): KubeObject | undefined {
    const tracked = this.#tracked.get(resource);
    return this.#view(resource, key, tracked?.store.getByKey(key));
  }

  #record(resource: string, key: string, before: KubeObject | undefined, after: KubeObject): void {
    const tracked = this.#tracked.get(resource);
    if (!tracked || !after?.metadata?.name) return;
    let entries = this.#entries.get(resource);
    if (!entries) this.#entries.set(resource, entries = new Map());
    if (entries.size > 1024) this.#purge(entries);
    let beforeRv = before?.metadata?.resourceVersion ?? "";
    // A write on top of our own previous write, which the cache has not seen either: the cache
    // still shows what it showed before the first one.
    const previous = entries.get(key);
    if (previous && previous.after.metadata?.resourceVersion === beforeRv) {
      beforeRv = previous.before;
    }
    entries.set(key, { before: beforeRv, after: tracked.view(after), at: this.#clock.now() });
  }

  #view(resource: string, key: string, cached: KubeObject | undefined): KubeObject | undefined {
    const entries = this.#entries.get(resource);
    const entry = entries?.get(key);
    if (!entry) return cached;
    const cachedRv = cached?.metadata?.resourceVersion ?? "";
    if (cachedRv === entry.before && this.#clock.now() - entry.at < OWN_WRITE_TTL_MS) {
      return entry.after;
    }
    entries!.delete(key);
    return cached;
  }

  #purge(entries: Map<string, Entry>): void {
    const now = this.#clock.now();
    for (const [key, entry] of entries) {
      if (now - entry.at >= OWN_WRITE_TTL_MS) entries.delete(key);
    }
  }
}

/** Whether `obj` is what `selector` asks for (namespace and equality labels). */
function selects(selector: ListSelector = {}, obj: KubeObject): boolean {
  if (selector.namespace !== undefined && obj.metadata?.namespace !== selector.namespace) {
    return false;
  }
  const labels = obj.metadata?.labels ?? {};
  return Object.entries(selector.labels ?? {}).every(([k, v]) => labels[k] === v);
}
