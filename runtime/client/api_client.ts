/**
 * The client contract: the few verbs the controllers, the finalizer, leader election and the
 * watcher use, each with its own timeout and abort signal, so that no caller needs raw requests.
 *
 * `KubeClient` (runtime/client/client.ts) implements it over HTTP; `FakeApiClient` (testing/fake_api.ts)
 * implements it in memory for unit-speed tests of reconcile paths. Failures are `ApiError`s
 * carrying the API's Status (runtime/client/errors.ts) in both.
 */
import type { Priority } from "../pacing/pacing.ts";
import type { ResourceType } from "./resources.ts";

/** Per-call limits; every verb takes them. */
export interface CallOptions {
  /** Ends the request (the promise rejects with the abort reason). */
  signal?: AbortSignal;
  /** Overrides the client's timeout for this request; 0 disables. */
  timeoutMs?: number;
  /** A write's place in the queue for a write slot (runtime/pacing/pacing.ts); default "normal". */
  priority?: Priority;
}

export interface ListOptions extends CallOptions {
  /** Namespace of a namespaced type; omitted means all namespaces. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: "Exact" | "NotOlderThan";
}

export interface ListEachOptions extends ListOptions {
  /** Items come with `metadata.managedFields` empty: cut from their text, never parsed. */
  dropManagedFields?: boolean;
}

export interface WatchOptions extends ListOptions {
  allowWatchBookmarks?: boolean;
  /** Objects come with `metadata.managedFields` empty: cut from their text, never parsed. */
  dropManagedFields?: boolean;
  /**
   * Server-side timeout; the stream then ends normally and the caller resumes. A stream still
   * open well past it (a connection dropped without a word, which no read notices) is closed by
   * the client and ends the same way.
   */
  timeoutSeconds?: number;
}

export interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  object: T;
}

export interface ObjectList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

export type PatchType = "merge" | "json" | "strategic";

export interface WriteOptions extends CallOptions {
  fieldManager?: string;
  /** Server-side dry run: validate and default without persisting. */
  dryRun?: boolean;
  /** How the API server treats fields it does not know (its default: drop them with a warning). */
  fieldValidation?: "Strict" | "Warn" | "Ignore";
}

export interface PatchOptions extends WriteOptions {
  subresource?: string;
}

export interface ApplyOptions extends CallOptions {
  fieldManager: string;
  /** Take ownership of fields managed by others instead of failing with 409. */
  force?: boolean;
  subresource?: string;
  dryRun?: boolean;
}

export interface DeleteOptions extends CallOptions {
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  /** The delete fails with 409 Conflict unless the live object still has this uid/version. */
  preconditions?: { uid?: string; resourceVersion?: string };
  gracePeriodSeconds?: number;
  dryRun?: boolean;
}

export interface ApiClient {
  /** One object; NotFound is an `ApiError` (404). */
  get<T>(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    opts?: CallOptions,
  ): Promise<T>;
  /** One page of a list; pass `limit` and then the returned `metadata.continue` to paginate. */
  list<T>(rt: ResourceType, opts?: ListOptions): Promise<ObjectList<T>>;
  /**
   * Every object of a list, each handed to `onItem` as it arrives: the whole list is never held
   * at once. Resolves with the list's metadata. `timeoutMs` bounds a wait for the next data, not
   * the whole list.
   */
  listEach<T>(
    rt: ResourceType,
    onItem: (item: T) => void,
    opts?: ListEachOptions,
  ): Promise<ObjectList<T>["metadata"]>;
  /** POST: fails with 409 AlreadyExists when the name is taken. */
  create<T>(rt: ResourceType, obj: T, opts?: WriteOptions): Promise<T>;
  /** PUT: replaces the object; fails with 409 when `metadata.resourceVersion` is stale. */
  replace<T>(rt: ResourceType, obj: T, opts?: PatchOptions): Promise<T>;
  patch<T>(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: PatchType,
    opts?: PatchOptions,
  ): Promise<T>;
  /**
   * Server-side apply: the object states the fields `fieldManager` wants to own; the answer is the
   * merged result. A `metadata.resourceVersion` in the object is a precondition (409 Conflict).
   */
  apply<T>(rt: ResourceType, obj: T, opts: ApplyOptions): Promise<T>;
  /** Deletes one object; answers the object (while finalizers run) or a Success Status. */
  delete(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    opts?: DeleteOptions,
  ): Promise<unknown>;
  /**
   * Watches a collection from `resourceVersion`; ERROR events are thrown as `ApiError` (410 Gone:
   * relist). Ends when the server closes the stream, quietly when `signal` aborts.
   */
  watch<T>(rt: ResourceType, opts?: WatchOptions): AsyncGenerator<WatchEvent<T>>;
}
