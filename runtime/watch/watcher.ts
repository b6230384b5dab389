/**
 * Keeps one kind's `Store` in step with the API server: list, then watch from the list's
 * resourceVersion, forever.
 *
 * - A watch that ends (server timeout, dropped connection, apiserver restart) resumes from the last
 *   resourceVersion seen (bookmarks keep it fresh even when nothing we select changes), so nothing
 *   is missed and nothing is listed again.
 * - 410 Gone means that version is compacted away: list again; the store turns the difference into
 *   added/updated/deleted events, so a delete that happened in the gap still reaches controllers.
 * - Other failures back off with jitter (0.8 s doubling to 30 s) so that a recovering apiserver is
 *   not stormed by every client at once.
 * - A kind the API server does not serve (404 on the first list: a CustomResourceDefinition that
 *   was never applied) stops the watcher at once, naming what to apply: retrying cannot fix it,
 *   and waiting for the sync timeout would only hide the cause. Unless the kind is watched only
 *   where it is served (`whereServed`, an activation condition as the Java Operator SDK's): then
 *   its stream counts as synced with nothing in it and lists again every `recheckMs`, so a beta API
 *   the cluster does not serve neither fails the operator nor goes unwatched once it is turned on.
 * - A permission error before the first list completes stops the watcher (default: the operator's
 *   RBAC is wrong and retrying cannot fix it, so fail loudly at start-up) or, when configured,
 *   retries forever like any other error (RBAC may be applied after the operator).
 *
 * With a list of namespaces, one list+watch stream runs per namespace, all feeding the same store.
 * A namespaced install grants each namespace by a RoleBinding in it, which goes when the namespace
 * is deleted: a namespace that answers 401/403 is "not served" (reported once, retried with backoff,
 * relisted when it answers again) and does not hold up `synced` once another namespace listed, so
 * the others are served meanwhile. Every namespace refused before any listed is the RBAC wrong as a
 * whole, handled as the cluster-wide watch's refusal (stopOnForbidden).
 *
 * What a stream does next is a pure state machine (watch_step.ts: state + what happened → new state
 * + action) and how soon it does it a policy of five rules (watch_pacing.ts); this file does the
 * requests, fills the store and reports.
 */
import { type BackoffPolicy, WATCH_BACKOFF } from "../pacing/backoff.ts";
import type { ApiClient } from "../client/api_client.ts";
import { type Clock, sleep, systemClock } from "../core/clock.ts";
import { isForbidden, isGone, isNotFound, isUnauthorized } from "../client/errors.ts";
import { apiVersionOf, resourceName, type ResourceType } from "../client/resources.ts";
import { Cache, type IndexFunc, type KubeObject, type Store } from "../cache/store.ts";
import { type RuntimeLog, silentLog } from "../core/log.ts";
import type { RelistBudget } from "../pacing/relist_budget.ts";
import type { Slots } from "../pacing/slots.ts";
import { dropManagedFields, type Transform } from "../cache/transforms.ts";
import { WatchPacing } from "./watch_pacing.ts";
import {
  type Failure,
  NEW_STREAM,
  type RestartReason,
  type StreamInput,
  type StreamStep,
  watchStep,
} from "./watch_step.ts";

/** Hooks the manager wires to metrics. */
export interface WatcherMetrics {
  restarted(resource: string, reason: RestartReason): void;
  relisted(resource: string): void;
  event(resource: string, type: string): void;
  /** `namespace` is not served for `reason` (e.g. "Forbidden"), or, with none, served again. */
  notServed?(resource: string, namespace: string, reason: string | undefined): void;
}

interface WatcherOptions<T> {
  /** Namespaces to watch; undefined or empty watches all namespaces (or a cluster-scoped kind). */
  namespaces?: string[];
  labelSelector?: string;
  fieldSelector?: string;
  /** Stop (reject `synced`) on 401/403 before the first list, instead of retrying. Default true. */
  stopOnForbidden?: boolean;
  /** Server-side watch timeout; default a random 5 to 10 minutes per watch, as client-go does. */
  watchTimeoutSeconds?: number;
  backoff?: BackoffPolicy;
  /**
   * What the store keeps of each object (after `managedFields` is dropped, which every watcher
   * does): see runtime/cache/transforms.ts. Default: the object as received.
   */
  transform?: Transform<T>;
  /** Extra store indexes besides "namespace" and "owner". */
  indexes?: Record<string, IndexFunc<T>>;
  /**
   * Relists after 410 Gone spend from this budget, shared with the client's other watchers so that
   * their sum stays bounded; the watcher adds its streams to it. Default: none (only the
   * per-stream backoff).
   */
  relistBudget?: RelistBudget;
  /** Lists wait for a slot here, shared with the client's other watchers (runtime/pacing/slots.ts). */
  listSlots?: Slots;
  /**
   * Watched only where the API server serves the kind: a 404 on the first list makes the stream
   * synced and empty, and it lists again after `recheckMs` (instead of stopping the watcher).
   */
  whereServed?: { recheckMs: number };
  clock?: Clock;
  log?: RuntimeLog;
  metrics?: WatcherMetrics;
}

/**
 * What the operator says when the API server answers 404 to the list of a kind: which API is
 * missing and, for a kind this repository defines, the CRD file to apply.
 */
export function notServedMessage(type: ResourceType): string {
  const api = `${resourceName(type)}/${type.version}`;
  if (type.definedIn === undefined) return `the API server does not serve ${api}`;
  return `the API server does not serve ${api}: its CustomResourceDefinition is not installed; ` +
    `apply ${type.definedIn} (every CRD of the operator: kubectl apply --server-side -f crds/)`;
}

/** A watcher failed for good (e.g. forbidden at start-up); `synced` rejects with it. */
export class WatcherError extends Error {
  override name = "WatcherError";
}

export class Watcher<T extends KubeObject> {
  readonly resource: string;
  readonly #cache: Cache<T>;
  readonly #abort = new AbortController();
  readonly #opts: WatcherOptions<T>;
  readonly #clock: Clock;
  readonly #log: RuntimeLog;
  readonly #streams: (string | undefined)[];
  #listed = new Set<string | undefined>();
  /** Namespaces whose last list or watch was refused (401/403), with the API's reason. */
  #denied = new Map<string, string>();
  /** Streams whose first list found the kind not served (with `whereServed`). */
  #unserved = new Set<string | undefined>();
  #running: Promise<void>[] = [];
  #resolveSynced!: () => void;
  #rejectSynced!: (e: Error) => void;
  /** Resolves when every stream has completed its first list; rejects on a fatal error. */
  readonly synced: Promise<void>;

  constructor(
    readonly client: ApiClient,
    readonly type: ResourceType,
    opts: WatcherOptions<T> = {},
  ) {
    this.resource = resourceName(type);
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.log ?? silentLog;
    // A transformed store holds a view: an update invisible in the view wakes nobody.
    this.#cache = new Cache<T>(this.resource, opts.indexes, {
      quietUnchanged: opts.transform !== undefined,
    });
    const namespaces = type.namespaced && opts.namespaces?.length ? opts.namespaces : [undefined];
    this.#streams = [...new Set(namespaces)];
    opts.relistBudget?.addStreams(this.#streams.length);
    this.synced = new Promise((resolve, reject) => {
      this.#resolveSynced = resolve;
      this.#rejectSynced = reject;
    });
    // Whoever awaits `synced` sees the rejection; nobody awaiting must not crash the process.
    this.synced.catch(() => {});
  }

  /** The read-only cache this watcher fills. */
  get store(): Store<T> {
    return this.#cache;
  }

  start(): void {
    if (this.#running.length) return;
    this.#running = this.#streams.map((ns) => this.#runStream(ns));
  }

  /** Ends every stream (aborting open watches) and waits for them. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.all(this.#running);
  }

  /** One list+watch stream: watch_step.ts decides what comes next, watch_pacing.ts how soon. */
  async #runStream(namespace: string | undefined): Promise<void> {
    const signal = this.#abort.signal;
    const pacing = new WatchPacing(this.#opts.backoff ?? WATCH_BACKOFF, this.#opts.relistBudget);
    const stopOnForbidden = this.#opts.stopOnForbidden !== false;
    const selectors = {
      labelSelector: this.#opts.labelSelector,
      fieldSelector: this.#opts.fieldSelector,
    };
    let state = NEW_STREAM;
    const step = (input: StreamInput): StreamStep => {
      const next = watchStep(state, input, { stopOnForbidden });
      state = next.state;
      return next;
    };

    while (!signal.aborted) {
      try {
        if (state.resourceVersion === undefined) {
          step({ type: "listed", resourceVersion: await this.#list(namespace, selectors, signal) });
          pacing.listed();
          if (signal.aborted) break;
        }
        const started = this.#clock.now();
        let received = 0;
        const events = this.client.watch<T>(this.type, {
          namespace,
          ...selectors,
          resourceVersion: state.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: this.#opts.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
          signal,
          dropManagedFields: true,
        });
        for await (const event of events) {
          received++;
          step({ type: "event", resourceVersion: event.object?.metadata?.resourceVersion });
          this.#opts.metrics?.event(this.resource, event.type);
          if (event.type !== "BOOKMARK") this.#cache.apply(event.type, this.#typed(event.object));
          pacing.received();
          // Stopped: do not drain what the stream has buffered (thousands of events on a busy
          // stream) before noticing.
          if (signal.aborted) break;
        }
        if (signal.aborted) break;
        const closed = step({ type: "closed", received, elapsedMs: this.#clock.now() - started });
        this.#opts.metrics?.restarted(this.resource, "closed");
        this.#log.debug("watch closed; resuming", {
          resource: this.resource,
          namespace: namespace ?? "*",
          resourceVersion: state.resourceVersion,
        });
        const pause = closed.action.type === "go" ? closed.action.pause : undefined;
        if (pause) await sleep(this.#clock, pacing.delay(pause), signal);
      } catch (e) {
        if (signal.aborted) break;
        const expired = state.resourceVersion;
        const failed = step({
          type: "failed",
          failure: failureOf(e),
          namespaced: namespace !== undefined,
          othersRefused: this.#listed.size === 0 &&
            this.#streams.every((ns) => ns === namespace || this.#denied.has(ns!)),
        });
        if (!await this.#afterFailure(namespace, e, failed, expired, pacing)) return;
      }
    }
  }

  /**
   * Carries out what the state machine made of a failed list or watch: reports it, records a
   * refused namespace, gives up (false) or waits as paced before the stream goes on (true).
   */
  async #afterFailure(
    namespace: string | undefined,
    e: unknown,
    { action, restarted, deny, settle }: StreamStep,
    expired: string | undefined,
    pacing: WatchPacing,
  ): Promise<boolean> {
    const signal = this.#abort.signal;
    const log = this.#log;
    const fields = { resource: this.resource, namespace: namespace ?? "*" };
    const message = (e as Error)?.message ?? String(e);
    if (restarted === "gone") {
      this.#opts.metrics?.restarted(this.resource, "gone");
      log.info("resourceVersion expired; relisting", { ...fields, resourceVersion: expired });
      const delay = action.type === "go" && action.pause ? pacing.delay(action.pause) : 0;
      if (delay > 0) await sleep(this.#clock, delay, signal);
      for (let wait = pacing.relistWait(); wait > 0 && !signal.aborted;) {
        await sleep(this.#clock, wait, signal);
        wait = pacing.relistWait();
      }
      return true;
    }
    if (action.type === "stop" && action.reason === "not-served" && this.#opts.whereServed) {
      this.#notServedYet(namespace);
      await sleep(this.#clock, this.#opts.whereServed.recheckMs, signal);
      return true;
    }
    if (action.type === "stop" && action.reason === "not-served") {
      const err = new WatcherError(notServedMessage(this.type));
      log.error("kind not served at start-up; giving up", { ...fields, error: err.message });
      this.#rejectSynced(err);
      return false;
    }
    if (deny) this.#deny(namespace!, e as Error);
    if (action.type === "stop") {
      const err = new WatcherError(
        `cannot list/watch ${this.resource} in ${namespace ?? "all namespaces"}: ${message}`,
      );
      log.error("permission denied at start-up; giving up", { ...fields, error: err.message });
      this.#rejectSynced(err);
      return false;
    }
    if (settle) this.#settle();
    this.#opts.metrics?.restarted(this.resource, "error");
    const delay = action.pause ? pacing.delay(action.pause) : 0;
    log.warn("list/watch failed; retrying", {
      ...fields,
      error: message,
      retryInMs: delay,
      attempt: pacing.attempts,
    });
    await sleep(this.#clock, delay, signal);
    return true;
  }

  /**
   * Lists the kind in one streamed request (once a list slot is free, when the watcher shares them),
   * swaps the result into the cache and returns the list's resourceVersion.
   */
  async #list(
    namespace: string | undefined,
    selectors: { labelSelector?: string; fieldSelector?: string },
    signal: AbortSignal,
  ): Promise<string> {
    // One request, each object transformed as it arrives (client.listEach): the untransformed
    // list (thousands of pods with every field) is never held, and the apiserver serves it from
    // its watch cache instead of etcd page by page. Abortable: stop() must not wait for a list
    // from a busy apiserver.
    const items: T[] = [];
    const release = await this.#opts.listSlots?.acquire(signal);
    let metadata;
    try {
      metadata = await this.client.listEach<T>(
        this.type,
        (item) => items.push(this.#typed(item)),
        { namespace, ...selectors, signal, dropManagedFields: true },
      );
    } finally {
      release?.();
    }
    const list = { metadata, items };
    this.#listed.add(namespace);
    if (this.#unserved.delete(namespace)) {
      this.#log.info("kind served now; watching it", { resource: this.resource });
    }
    if (namespace !== undefined && this.#denied.delete(namespace)) {
      this.#log.info("namespace served again", { resource: this.resource, namespace });
      this.#opts.metrics?.notServed?.(this.resource, namespace, undefined);
    }
    const allSettled = this.#allSettled();
    this.#cache.replace(list.items, {
      namespace,
      synced: allSettled,
    });
    this.#opts.metrics?.relisted(this.resource);
    this.#log.debug("listed", {
      resource: this.resource,
      namespace: namespace ?? "*",
      items: list.items.length,
      resourceVersion: list.metadata.resourceVersion,
    });
    if (allSettled) this.#resolveSynced();
    return list.metadata.resourceVersion;
  }

  /** Namespaces refused now (401/403), with the API's reason: served again once they answer. */
  get notServed(): ReadonlyMap<string, string> {
    return this.#denied;
  }

  /** Every stream has listed, or its namespace was refused, or the kind is not served there. */
  #allSettled(): boolean {
    return this.#streams.every((ns) =>
      this.#listed.has(ns) || this.#denied.has(ns!) || this.#unserved.has(ns)
    );
  }

  /**
   * A stream of a kind watched only where served found it not served: reported once, and synced
   * (empty) once every stream settled, so that the controllers start without it.
   */
  #notServedYet(namespace: string | undefined): void {
    if (!this.#unserved.has(namespace) && this.#unserved.size === 0) {
      this.#log.info("kind not served; watching it once it is", {
        resource: this.resource,
        error: notServedMessage(this.type),
        recheckMs: this.#opts.whereServed?.recheckMs,
      });
    }
    this.#unserved.add(namespace);
    if (!this.#allSettled()) return;
    this.#cache.markSynced();
    this.#resolveSynced();
  }

  /** Synced by a refusal: only when some namespace listed (all refused is the RBAC as a whole). */
  #settle(): void {
    if (this.#listed.size === 0 || !this.#allSettled()) return;
    this.#cache.markSynced();
    this.#resolveSynced();
  }

  /** Records `namespace` as not served, reporting it when it was served (or pending) before. */
  #deny(namespace: string, e: Error): void {
    const reason = (e as { reason?: string }).reason ?? "Forbidden";
    if (this.#denied.get(namespace) === reason) return;
    this.#denied.set(namespace, reason);
    this.#log.error("namespace not served; retrying with backoff", {
      resource: this.resource,
      namespace,
      reason,
      error: e.message,
    });
    this.#opts.metrics?.notServed?.(this.resource, namespace, reason);
  }

  /**
   * What the store keeps of a received object: typed (list items come without apiVersion/kind),
   * without managedFields, and transformed.
   */
  #typed(received: T): T {
    let obj = dropManagedFields(received);
    if (!obj.apiVersion || !obj.kind) {
      obj = { ...obj, apiVersion: apiVersionOf(this.type), kind: this.type.kind };
    }
    return this.#opts.transform ? this.#opts.transform(obj) : obj;
  }
}

/** How a list or watch failed, as the stream's state machine tells failures apart. */
function failureOf(e: unknown): Failure {
  if (isGone(e)) return "gone";
  if (isNotFound(e)) return "not-found";
  if (isForbidden(e) || isUnauthorized(e)) return "denied";
  return "other";
}
