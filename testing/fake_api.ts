/**
 * An in-memory API server behind the client contract (runtime/client/api_client.ts), with just enough of
 * the real one's semantics to unit-test reconcile paths in milliseconds:
 *
 * - objects get a uid, a creationTimestamp and a resourceVersion that moves on every change;
 *   `metadata.generation` moves when `spec` changes;
 * - create answers 409 AlreadyExists for a taken name (a dry run stores nothing; generateName gets
 *   a counter); get, patch, replace and delete 404;
 * - a resourceVersion in an update, a merge patch or an apply is a precondition (409 Conflict), and
 *   an apply of an absent object creates it (the operator's create-only apply relies on this);
 * - server-side apply merges what the field manager states into the live object and drops what
 *   that manager stated before and no longer does (lists are atomic); `force` is implied;
 * - the status subresource changes only `status`, and the main resource never does;
 * - immutable fields answer 422 Invalid: a Service's clusterIP, a Pod's spec, a Job's template;
 * - delete honours uid and resourceVersion preconditions (409) and finalizers (deletionTimestamp
 *   set; the object goes when its last finalizer is removed); nothing is garbage-collected, so a
 *   Foreground or Orphan delete leaves the object with the `foregroundDeletion` or `orphan`
 *   finalizer for good, as a kube-apiserver without a controller manager does;
 * - `react` injects failures (a 403, a 500, a timeout) for the requests it matches.
 *
 * Every request is recorded in `requests`, so tests count writes as the operator's metrics would.
 */
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import type {
  ApiClient,
  ApplyOptions,
  CallOptions,
  DeleteOptions,
  ListEachOptions,
  ListOptions,
  ObjectList,
  PatchOptions,
  PatchType,
  WatchEvent,
  WatchOptions,
  WriteOptions,
} from "../runtime/client/api_client.ts";
import { ApiError } from "../runtime/client/errors.ts";
import type { Verb } from "../runtime/client/request_labels.ts";
import { apiVersionOf, resourceName, type ResourceType } from "../runtime/client/resources.ts";

interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [field: string]: unknown;
}

/** One request as the fake saw it. */
export interface FakeRequest {
  verb: Verb;
  /** "configmaps", "jobs.batch", "miniclusters.flux-framework.org/status", ... */
  resource: string;
  namespace?: string;
  name?: string;
}

/** Answers a request with an error instead of serving it (undefined: serve it). */
export type Reactor = (request: FakeRequest) => Error | undefined;

const WRITE_VERBS = new Set<Verb>(["create", "update", "patch", "apply", "delete"]);

type Listener = (event: WatchEvent<Obj>, resource: string) => void;

export class FakeApiClient implements ApiClient {
  readonly requests: FakeRequest[] = [];
  #objects = new Map<string, Obj>();
  /** By object id and field manager: what that manager last applied. */
  #applied = new Map<string, Map<string, Obj>>();
  #reactors: Reactor[] = [];
  #listeners = new Set<Listener>();
  #revision = 100;
  #uids = 0;
  #generated = 0;
  now: () => Date = () => new Date();

  /** Requests that changed something (or tried to). */
  writes(): FakeRequest[] {
    return this.requests.filter((r) => WRITE_VERBS.has(r.verb));
  }

  /** Adds a reactor; it stays until the returned function removes it. */
  react(reactor: Reactor): () => void {
    this.#reactors.push(reactor);
    return () => this.#reactors = this.#reactors.filter((r) => r !== reactor);
  }

  /**
   * Stores `obj` as another controller would have written it (status included), bypassing the
   * request log; the answer is the stored copy.
   */
  seed<T>(rt: ResourceType, obj: T): T {
    const o = obj as Obj;
    const live = this.#objects.get(idOf(rt, o.metadata?.namespace, o.metadata!.name!));
    const next = live ? { ...clone(o), metadata: { ...live.metadata, ...clone(o.metadata) } } : {
      ...this.#created(rt, o),
      ...(o.status !== undefined ? { status: clone(o.status) } : {}),
    };
    return this.#store(rt, next, live ? "MODIFIED" : "ADDED") as T;
  }

  /** Every object of `rt` (copies), as a list would return them. */
  objects<T>(rt: ResourceType): T[] {
    const prefix = `${resourceName(rt)}/`;
    return [...this.#objects].filter(([id]) => id.startsWith(prefix)).map(([, o]) => clone(o) as T);
  }

  /** The stored object (a copy), or undefined. */
  peek<T>(rt: ResourceType, namespace: string | undefined, name: string): T | undefined {
    const o = this.#objects.get(idOf(rt, namespace, name));
    return o ? clone(o) as T : undefined;
  }

  get<T>(rt: ResourceType, namespace: string | undefined, name: string, _?: CallOptions) {
    return this.#serve<T>({ verb: "get", resource: resourceName(rt), namespace, name }, () => {
      return clone(this.#existing(rt, namespace, name)) as T;
    });
  }

  list<T>(rt: ResourceType, opts: ListOptions = {}): Promise<ObjectList<T>> {
    const request = {
      verb: "list" as const,
      resource: resourceName(rt),
      namespace: opts.namespace,
    };
    return this.#serve(request, () => {
      const items = this.objects<Obj>(rt).filter((o) =>
        (opts.namespace === undefined || o.metadata?.namespace === opts.namespace) &&
        selects(o, opts)
      );
      return { metadata: { resourceVersion: String(this.#revision) }, items: items as T[] };
    });
  }

  async listEach<T>(
    rt: ResourceType,
    onItem: (item: T) => void,
    opts: ListEachOptions = {},
  ): Promise<ObjectList<T>["metadata"]> {
    const list = await this.list<T>(rt, opts);
    for (const item of list.items as Obj[]) {
      const meta = item.metadata;
      if (opts.dropManagedFields && meta?.managedFields) {
        onItem({ ...item, metadata: { ...meta, managedFields: [] } } as T);
      } else onItem(item as T);
    }
    return list.metadata;
  }

  create<T>(rt: ResourceType, obj: T, opts: WriteOptions = {}): Promise<T> {
    const given = obj as Obj;
    const generated = given.metadata?.name === undefined && given.metadata?.generateName;
    const o = generated
      ? { ...given, metadata: { ...given.metadata, name: `${generated}${++this.#generated}` } }
      : given;
    const { namespace, name } = o.metadata ?? {};
    return this.#serve({ verb: "create", resource: resourceName(rt), namespace, name }, () => {
      if (this.#objects.has(idOf(rt, namespace, name!))) {
        throw apiError(409, "AlreadyExists", `${rt.plural} "${name}" already exists`);
      }
      // A dry run answers what would be stored, and stores nothing.
      if (opts.dryRun) return this.#created(rt, o) as T;
      return this.#store(rt, this.#created(rt, o), "ADDED") as T;
    });
  }

  replace<T>(rt: ResourceType, obj: T, opts: PatchOptions = {}): Promise<T> {
    const o = obj as Obj;
    const { namespace, name, resourceVersion } = o.metadata ?? {};
    const resource = withSub(rt, opts.subresource);
    return this.#serve({ verb: "update", resource, namespace, name }, () => {
      const live = this.#existing(rt, namespace, name!);
      precondition(live, resourceVersion);
      const next = { ...clone(o), metadata: { ...live.metadata, ...o.metadata } };
      return this.#update(rt, live, scoped(live, next, opts.subresource)) as T;
    });
  }

  patch<T>(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: PatchType,
    opts: PatchOptions = {},
  ): Promise<T> {
    const resource = withSub(rt, opts.subresource);
    return this.#serve({ verb: "patch", resource, namespace, name }, () => {
      if (type !== "merge") throw new Error(`FakeApiClient: ${type} patches are not supported`);
      const live = this.#existing(rt, namespace, name);
      const p = patch as Obj;
      precondition(live, p.metadata?.resourceVersion);
      const next = mergePatch(clone(live), p) as Obj;
      return this.#update(rt, live, scoped(live, next, opts.subresource)) as T;
    });
  }

  apply<T>(rt: ResourceType, obj: T, opts: ApplyOptions): Promise<T> {
    const o = clone(obj as Obj);
    const { namespace, name, resourceVersion } = o.metadata ?? {};
    const resource = withSub(rt, opts.subresource);
    return this.#serve({ verb: "apply", resource, namespace, name }, () => {
      const id = idOf(rt, namespace, name!);
      const live = this.#objects.get(id);
      if (live) precondition(live, resourceVersion);
      if (o.metadata) o.metadata = { ...o.metadata, resourceVersion: undefined };
      const managers = this.#applied.get(id) ?? new Map<string, Obj>();
      this.#applied.set(id, managers);
      if (!live) {
        if (opts.subresource) throw notFound(rt, name!);
        managers.set(opts.fieldManager, o);
        return this.#store(rt, this.#created(rt, o), "ADDED") as T;
      }
      const next = clone(live);
      dropStated(next, managers.get(opts.fieldManager) ?? {}, o);
      mergeStated(next, o);
      managers.set(opts.fieldManager, o);
      return this.#update(rt, live, scoped(live, next, opts.subresource)) as T;
    });
  }

  delete(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<unknown> {
    return this.#serve({ verb: "delete", resource: resourceName(rt), namespace, name }, () => {
      const live = this.#existing(rt, namespace, name);
      const uid = opts.preconditions?.uid;
      if (uid && uid !== live.metadata?.uid) {
        throw apiError(409, "Conflict", `Precondition failed: UID in precondition: ${uid}`);
      }
      const version = opts.preconditions?.resourceVersion;
      if (version && version !== live.metadata?.resourceVersion) {
        throw apiError(
          409,
          "Conflict",
          `Precondition failed: ResourceVersion in precondition: ${version}, ` +
            `ResourceVersion in object meta: ${live.metadata?.resourceVersion}`,
        );
      }
      if (live.metadata?.deletionTimestamp) return clone(live);
      // The garbage collector's finalizer, which only the garbage collector removes.
      const policy = opts.propagationPolicy;
      const gc = policy === "Foreground"
        ? "foregroundDeletion"
        : policy === "Orphan"
        ? "orphan"
        : "";
      const finalizers = [...(live.metadata?.finalizers ?? []), ...(gc ? [gc] : [])];
      if (finalizers.length) {
        const deletionTimestamp = this.now().toISOString().replace(/\.\d{3}Z$/, "Z");
        return this.#store(rt, {
          ...clone(live),
          metadata: { ...live.metadata, finalizers, deletionTimestamp },
        }, "MODIFIED");
      }
      this.#remove(rt, live);
      return { kind: "Status", apiVersion: "v1", status: "Success" };
    });
  }

  /** Events of `rt` from now on, until `signal` aborts (no history, no bookmarks). */
  async *watch<T>(rt: ResourceType, opts: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    const queue: WatchEvent<T>[] = [];
    let wake: (() => void) | undefined;
    const listener: Listener = (event, resource) => {
      const ns = event.object.metadata?.namespace;
      if (resource !== resourceName(rt)) return;
      if (opts.namespace !== undefined && ns !== opts.namespace) return;
      queue.push(event as WatchEvent<T>);
      wake?.();
    };
    this.#listeners.add(listener);
    const aborted = new Promise<void>((r) => opts.signal?.addEventListener("abort", () => r()));
    try {
      while (!opts.signal?.aborted) {
        while (queue.length) yield queue.shift()!;
        await Promise.race([new Promise<void>((r) => wake = r), aborted]);
      }
    } finally {
      this.#listeners.delete(listener);
    }
  }

  // -------------------------------------------------------------------------------------------

  async #serve<T>(request: FakeRequest, fn: () => T): Promise<T> {
    this.requests.push(request);
    await Promise.resolve(); // answers come asynchronously, as over the wire
    for (const reactor of this.#reactors) {
      const error = reactor(request);
      if (error) throw error;
    }
    return fn();
  }

  #existing(rt: ResourceType, namespace: string | undefined, name: string): Obj {
    const live = this.#objects.get(idOf(rt, namespace, name));
    if (!live) throw notFound(rt, name);
    return live;
  }

  #created(rt: ResourceType, o: Obj): Obj {
    const obj = clone(o);
    obj.apiVersion ??= apiVersionOf(rt);
    obj.kind ??= rt.kind;
    obj.metadata = {
      ...obj.metadata,
      uid: `uid-${++this.#uids}`,
      creationTimestamp: this.now().toISOString().replace(/\.\d{3}Z$/, "Z"),
      ...(obj.spec !== undefined ? { generation: 1 } : {}),
    };
    delete obj.status;
    if (rt.kind === "Service") defaultClusterIp(obj, this.#uids);
    return obj;
  }

  #update(rt: ResourceType, live: Obj, next: Obj): Obj {
    immutable(rt, live, next);
    const same = JSON.stringify(canonical(live)) === JSON.stringify(canonical(next));
    if (same) return clone(live);
    if (JSON.stringify(live.spec) !== JSON.stringify(next.spec)) {
      next.metadata = { ...next.metadata, generation: (live.metadata?.generation ?? 0) + 1 };
    }
    if (next.metadata?.deletionTimestamp && !next.metadata.finalizers?.length) {
      this.#remove(rt, next);
      return clone(next);
    }
    return this.#store(rt, next, "MODIFIED");
  }

  #store(rt: ResourceType, obj: Obj, type: "ADDED" | "MODIFIED"): Obj {
    obj.metadata = { ...obj.metadata, resourceVersion: String(++this.#revision) };
    const { namespace, name } = obj.metadata;
    this.#objects.set(idOf(rt, namespace, name!), obj);
    this.#emit(rt, { type, object: clone(obj) });
    return clone(obj);
  }

  #remove(rt: ResourceType, obj: Obj): void {
    const id = idOf(rt, obj.metadata?.namespace, obj.metadata!.name!);
    this.#objects.delete(id);
    this.#applied.delete(id);
    const gone = clone(obj);
    gone.metadata = { ...gone.metadata, resourceVersion: String(++this.#revision) };
    this.#emit(rt, { type: "DELETED", object: gone });
  }

  #emit(rt: ResourceType, event: WatchEvent<Obj>): void {
    for (const listener of this.#listeners) listener(event, resourceName(rt));
  }
}

function idOf(rt: ResourceType, namespace: string | undefined, name: string): string {
  return `${resourceName(rt)}/${namespace ?? ""}/${name}`;
}

function withSub(rt: ResourceType, subresource?: string): string {
  return subresource ? `${resourceName(rt)}/${subresource}` : resourceName(rt);
}

export function apiError(code: number, reason: string, message: string): ApiError {
  return new ApiError({
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    code,
    reason,
    message,
  });
}

function notFound(rt: ResourceType, name: string): ApiError {
  return apiError(404, "NotFound", `${rt.plural} "${name}" not found`);
}

function precondition(live: Obj, resourceVersion: string | undefined): void {
  if (!resourceVersion || resourceVersion === live.metadata?.resourceVersion) return;
  throw apiError(
    409,
    "Conflict",
    "Operation cannot be fulfilled: the object has been modified; " +
      "please apply your changes to the latest version and try again",
  );
}

/** The status subresource changes only status; the main resource everything but status. */
function scoped(live: Obj, next: Obj, subresource?: string): Obj {
  if (subresource === "status") return { ...clone(live), status: next.status };
  return { ...next, status: live.status, metadata: { ...next.metadata, uid: live.metadata?.uid } };
}

function immutable(rt: ResourceType, live: Obj, next: Obj): void {
  const spec = (o: Obj) => (o.spec ?? {}) as Record<string, unknown>;
  const refuse = (field: string) => {
    throw apiError(
      422,
      "Invalid",
      `${rt.kind} "${live.metadata?.name}" is invalid: ${field}: ` +
        "Invalid value: field is immutable",
    );
  };
  if (rt.kind === "Service") {
    const before = spec(live).clusterIP;
    const after = spec(next).clusterIP;
    if (after === undefined || after === "") spec(next).clusterIP = before;
    else if (before !== after) refuse("spec.clusterIP");
  }
  if (rt.kind === "Pod" && JSON.stringify(live.spec) !== JSON.stringify(next.spec)) refuse("spec");
  if (
    rt.kind === "Job" &&
    JSON.stringify(canonical(spec(live).template)) !==
      JSON.stringify(canonical(spec(next).template))
  ) refuse("spec.template");
}

function defaultClusterIp(svc: Obj, n: number): void {
  const spec = (svc.spec ??= {}) as Record<string, unknown>;
  if (spec.clusterIP === undefined || spec.clusterIP === "") {
    spec.clusterIP = `10.96.${(n >> 8) & 255}.${n & 255}`;
  }
}

const IDENTITY = new Set(["name", "namespace", "uid", "resourceVersion", "creationTimestamp"]);

/** Removes what `before` stated and `now` does not (the manager gave those fields up). */
function dropStated(target: Record<string, unknown>, before: Obj, now: Obj, depth = 0): void {
  for (const [key, value] of Object.entries(before)) {
    if (depth === 1 && IDENTITY.has(key)) continue;
    if (!(key in now)) delete target[key];
    else if (isPlain(value) && isPlain(now[key]) && isPlain(target[key])) {
      dropStated(target[key] as Record<string, unknown>, value as Obj, now[key] as Obj, depth + 1);
    }
  }
}

/** Merges what the manager states now (objects field by field, lists and scalars whole). */
function mergeStated(target: Record<string, unknown>, now: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(now)) {
    if (value === undefined) continue;
    if (isPlain(value) && isPlain(target[key])) {
      mergeStated(target[key] as Record<string, unknown>, value as Record<string, unknown>);
    } else target[key] = clone(value);
  }
}

/** RFC 7386: null deletes, objects merge, everything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlain(patch)) return clone(patch);
  const out: Record<string, unknown> = isPlain(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/**
 * Whether equality selectors pick `o`: labels, and fields as dotted paths
 * (`involvedObject.kind=Job,reason=FailedCreate`).
 */
export function selects(
  o: unknown,
  selectors: { labelSelector?: string; fieldSelector?: string },
): boolean {
  const obj = o as Obj;
  const field = (path: string): unknown =>
    path.split(".").reduce((v: unknown, k) => (v as Obj | undefined)?.[k], obj);
  return Object.entries(parseSelector(selectors.labelSelector)).every(([k, v]) =>
    obj.metadata?.labels?.[k] === v
  ) &&
    Object.entries(parseSelector(selectors.fieldSelector)).every(([k, v]) =>
      String(field(k) ?? "") === v
    );
}

function parseSelector(selector?: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (selector ?? "").split(",").filter(Boolean)) {
    const [k, v] = part.split("=");
    out[k.trim()] = (v ?? "").trim();
  }
  return out;
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (!isPlain(v)) return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) {
    if (k !== "resourceVersion" && v[k] !== undefined) out[k] = canonical(v[k]);
  }
  return out;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function clone<T>(v: T): T {
  return v === undefined ? v : structuredClone(v);
}
