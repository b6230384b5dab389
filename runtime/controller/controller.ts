/**
 * A controller: store events → keys in a workqueue → N workers → `reconcile(obj, ctx)` → Action.
 *
 * - Workers start only when every store the controller reads has synced, so a reconcile never acts
 *   on a half-filled cache (e.g. "the Job does not exist" only because it is not listed yet).
 * - Events of secondary kinds (children) are mapped to primary keys by mapper functions; two ready
 *   mappers cover the common cases (controller ownerReference, or a label naming the primary).
 * - A thrown error is logged, counted and retried with the queue's per-key backoff; a
 *   `TerminalError` is logged and counted but not retried (the next change of the object retries);
 *   nothing a reconciler throws escapes the worker loop.
 * - A long, jittered periodic resync re-enqueues every primary as a safety net against a missed
 *   event or a reconciler bug that forgot to requeue.
 * - Each reconcile logs with its key and a reconcile id bound (`ctx.log`), and says at debug level
 *   why it ran: which events brought the key since its last reconcile.
 */
import type { OwnerReference } from "kubernetes-types/meta/v1.d.ts";
import { withJitter } from "../pacing/backoff.ts";
import { type Clock, systemClock, type TimerId } from "../core/clock.ts";
import {
  controllerOf,
  type KubeObject,
  objectKey,
  splitKey,
  type Store,
  type StoreEvent,
} from "../cache/store.ts";
import { type RuntimeLog, silentLog, withFields } from "../core/log.ts";
import { WorkQueue, type WorkQueueMetrics } from "./workqueue.ts";

/** What the reconciler wants to happen next. */
export interface Action {
  /** Reconcile again after this many ms, even if nothing changes. */
  requeueAfter?: number;
}

export const Action: {
  awaitChange(): Action;
  requeueAfter(ms: number): Action;
  soonest(action: Action, requeueAfterMs?: number): Action;
} = {
  /** Nothing more to do until something changes. */
  awaitChange(): Action {
    return {};
  },
  /** Check again in `ms` (e.g. to poll something the operator cannot watch). */
  requeueAfter(ms: number): Action {
    return { requeueAfter: ms };
  },
  /** `action`, or a requeue after `requeueAfterMs` when that comes sooner. */
  soonest(action: Action, requeueAfterMs?: number): Action {
    if (requeueAfterMs === undefined) return action;
    return { requeueAfter: Math.min(requeueAfterMs, action.requeueAfter ?? requeueAfterMs) };
  },
};

/**
 * An error retrying cannot fix (invalid spec, missing permission the user must grant). Recorded
 * like any error but not retried: the next change of the object triggers the next attempt.
 */
export class TerminalError extends Error {
  override name = "TerminalError";
}

export interface ReconcileContext {
  /** The workqueue key, "namespace/name". */
  key: string;
  /** Unique per reconcile; bound to `log` with the key, so one reconcile's records can be found. */
  reconcileID?: string;
  namespace?: string;
  name: string;
  /** Failures in a row before this attempt (0 on a first try). */
  retries: number;
  /** Aborted when the controller stops: long waits inside a reconcile should honour it. */
  signal: AbortSignal;
  log: RuntimeLog;
}

export interface Reconciler<T> {
  reconcile(obj: T, ctx: ReconcileContext): Promise<Action>;
  /**
   * Called for a key whose object is gone from the cache (deleted, and with no finalizer left).
   * Optional: most reconcilers rely on ownerReferences and garbage collection.
   */
  deleted?(key: string, ctx: ReconcileContext): Promise<void>;
}

/** Maps an event of a secondary kind to the keys of the primaries it concerns. */
export type Mapper<S> = (obj: S) => string[];

export interface Secondary<S extends KubeObject = KubeObject> {
  store: Store<S>;
  mapper: Mapper<S>;
  /**
   * Batch this kind's events: the primary is reconciled this long after the first of them (later
   * ones within the window ride along), not once per event. A Job's pods change one by one; one
   * reconcile for a burst costs a little latency and saves the rest. Default 0 (at once).
   */
  delayMs?: number;
  /**
   * Events whose object this accepts wake the primary at once, despite `delayMs`: what they show
   * may be gone from the store by the end of the window (a last state before a delete).
   */
  atOnce?: (obj: S) => boolean;
}

/** Result of one reconcile, for metrics. */
export type ReconcileResult = "success" | "requeue" | "error" | "terminal";

export interface ControllerMetrics {
  reconciled(controller: string, result: ReconcileResult, seconds: number): void;
  /** Per-controller workqueue hooks. */
  queue?: WorkQueueMetrics;
}

export interface ControllerOptions<T extends KubeObject> {
  name: string;
  primary: Store<T>;
  // Each secondary has its own object type; the mapper and store agree on it.
  // deno-lint-ignore no-explicit-any
  secondaries?: Secondary<any>[];
  reconciler: Reconciler<T>;
  /** Concurrent workers. Default 1. */
  concurrency?: number;
  /** Re-enqueue every primary about this often (±10 %); 0 disables. Default 1 h. */
  resyncPeriodMs?: number;
  /** Only enqueue primary events this accepts (e.g. skip status-only updates). */
  filter?: (event: StoreEvent<T>) => boolean;
  clock?: Clock;
  log?: RuntimeLog;
  metrics?: ControllerMetrics;
}

/** Primaries whose controller ownerReference is of `kind` in `apiGroup` ("" for core). */
export function mapByControllerOwner(kind: string, apiGroup: string): Mapper<KubeObject> {
  return (obj) => {
    const owner = controllerOf(obj);
    if (!owner || !ownerMatches(owner, kind, apiGroup)) return [];
    const ns = obj.metadata?.namespace;
    return [ns ? `${ns}/${owner.name}` : owner.name];
  };
}

/** Primaries named by `label` on the object, in the object's namespace (e.g. pods of a Job). */
export function mapByLabel(label: string): Mapper<KubeObject> {
  return (obj) => {
    const name = obj.metadata?.labels?.[label];
    if (!name) return [];
    const ns = obj.metadata?.namespace;
    return [ns ? `${ns}/${name}` : name];
  };
}

function ownerMatches(ref: OwnerReference, kind: string, apiGroup: string): boolean {
  if (ref.kind !== kind) return false;
  const slash = ref.apiVersion.indexOf("/");
  const group = slash < 0 ? "" : ref.apiVersion.slice(0, slash);
  return group === apiGroup;
}

export class Controller<T extends KubeObject> {
  readonly name: string;
  readonly queue: WorkQueue;
  readonly #opts: ControllerOptions<T>;
  readonly #clock: Clock;
  readonly #log: RuntimeLog;
  readonly #abort = new AbortController();
  #unsubscribe: Array<() => void> = [];
  #workers: Promise<void>[] = [];
  #resyncTimer?: TimerId;
  #started = false;
  #stopped = false;
  /** Why each key was queued for its next reconcile. */
  #why = new Map<string, Set<string>>();
  /** Why a key a worker holds was queued again meanwhile (its reconcile after this one). */
  #whyAfter = new Map<string, Set<string>>();
  #active = 0;

  constructor(opts: ControllerOptions<T>) {
    this.name = opts.name;
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.log ?? silentLog;
    this.queue = new WorkQueue({ clock: this.#clock, metrics: opts.metrics?.queue });
  }

  /** Workers in a reconcile right now. */
  get activeWorkers(): number {
    return this.#active;
  }

  /** Every store this controller reads. */
  get stores(): Store<KubeObject>[] {
    return [this.#opts.primary, ...(this.#opts.secondaries ?? []).map((s) => s.store)];
  }

  /**
   * Subscribes to the stores at once (events queue up), waits for every store to sync, enqueues
   * every primary and starts the workers. Resolves once the workers run (or the controller was
   * stopped meanwhile).
   */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const { primary, secondaries = [], filter } = this.#opts;
    this.#unsubscribe.push(primary.subscribe((event) => {
      // What the user asked for goes before what the world reported (see WorkQueue: urgent); what
      // the first list loads at start-up is neither, and waits behind both.
      if (filter && !filter(event)) return;
      const key = objectKey(event.object);
      this.#note(key, event.initialList ? "listed" : event.type);
      this.queue.add(key, { urgent: !event.initialList });
    }));
    for (const { store, mapper, delayMs = 0, atOnce } of secondaries) {
      this.#unsubscribe.push(store.subscribe((event) => {
        const keys = new Set(this.#safeMap(mapper, event.object, store.resource));
        // An update may change the owner (a coalesced delete-and-recreate, an orphaning edit): the
        // previous owner must hear about it too, or it never learns its child is gone.
        if (event.old) {
          for (const k of this.#safeMap(mapper, event.old, store.resource)) keys.add(k);
        }
        for (const key of keys) {
          this.#note(key, `${store.resource} ${event.type}`);
          if (delayMs > 0 && !atOnce?.(event.object)) this.queue.addAfter(key, delayMs);
          else this.queue.add(key);
        }
      }));
    }
    const stopped = new Promise<void>((resolve) =>
      this.#abort.signal.addEventListener("abort", () => resolve(), { once: true })
    );
    await Promise.race([Promise.all(this.stores.map((s) => s.ready)), stopped]);
    if (this.#stopped) return;
    for (const obj of primary.list()) {
      this.#note(objectKey(obj), "listed");
      this.queue.add(objectKey(obj));
    }
    const n = Math.max(1, this.#opts.concurrency ?? 1);
    this.#log.info("controller started", { controller: this.name, workers: n });
    for (let i = 0; i < n; i++) this.#workers.push(this.#work());
    this.#scheduleResync();
  }

  /** Stops intake, waits for reconciles in flight, and ends the workers. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort();
    for (const off of this.#unsubscribe.splice(0)) off();
    if (this.#resyncTimer !== undefined) this.#clock.clearTimeout(this.#resyncTimer);
    await this.queue.shutDown();
    await Promise.all(this.#workers);
    this.#log.info("controller stopped", { controller: this.name });
  }

  async #work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      this.#active++;
      try {
        await this.#reconcileKey(key);
      } finally {
        this.#active--;
        const after = this.#whyAfter.get(key);
        this.#whyAfter.delete(key);
        if (after) this.#why.set(key, after);
        this.queue.done(key);
      }
    }
  }

  /** One reconcile of one key; never throws. */
  async #reconcileKey(key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const retries = this.queue.numRequeues(key);
    const reconcileID = crypto.randomUUID();
    const log = withFields(this.#log, { key, reconcileID });
    const ctx: ReconcileContext = {
      key,
      reconcileID,
      namespace,
      name,
      retries,
      signal: this.#abort.signal,
      log,
    };
    const why = [...this.#why.get(key) ?? []].join(", ") || "unknown";
    this.#why.delete(key);
    const started = this.#clock.now();
    const seconds = () => (this.#clock.now() - started) / 1000;
    log.debug("reconciling", { why });
    try {
      const obj = this.#opts.primary.getByKey(key);
      let action: Action = {};
      if (obj) action = await this.#opts.reconciler.reconcile(obj, ctx);
      else await this.#opts.reconciler.deleted?.(key, ctx);
      this.queue.forget(key);
      if (action.requeueAfter !== undefined && action.requeueAfter >= 0) {
        this.#note(key, "requeue");
        this.queue.addAfter(key, action.requeueAfter);
        this.#opts.metrics?.reconciled(this.name, "requeue", seconds());
      } else {
        this.#opts.metrics?.reconciled(this.name, "success", seconds());
      }
      log.debug("reconciled", { seconds: seconds(), requeueAfterMs: action.requeueAfter });
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      if (e instanceof TerminalError) {
        this.queue.forget(key);
        this.#opts.metrics?.reconciled(this.name, "terminal", seconds());
        log.error("reconcile failed; not retrying", { why, error });
        return;
      }
      this.#opts.metrics?.reconciled(this.name, "error", seconds());
      if (this.#stopped) return;
      const retryInMs = this.queue.nextBackoff(key);
      this.#note(key, "retry");
      this.queue.addRateLimited(key);
      log.warn("reconcile failed; retrying", { why, error, retries, retryInMs });
    }
  }

  /** Remembers why `key` was queued, for its next reconcile's log. */
  #note(key: string, why: string): void {
    const reasonsOf = this.queue.isHeld(key) ? this.#whyAfter : this.#why;
    let reasons = reasonsOf.get(key);
    if (!reasons) reasonsOf.set(key, reasons = new Set());
    if (reasons.size < 8) reasons.add(why);
  }

  #safeMap<S>(mapper: Mapper<S>, obj: S, resource: string): string[] {
    try {
      return mapper(obj);
    } catch (e) {
      this.#log.error("mapper failed", { controller: this.name, resource, error: String(e) });
      return [];
    }
  }

  #scheduleResync(): void {
    const period = this.#opts.resyncPeriodMs ?? 3_600_000;
    if (period <= 0 || this.#stopped) return;
    this.#resyncTimer = this.#clock.setTimeout(() => {
      this.#resyncTimer = undefined;
      if (this.#stopped) return;
      const all = this.#opts.primary.list();
      this.#log.debug("resync", { controller: this.name, keys: all.length });
      for (const obj of all) {
        this.#note(objectKey(obj), "resync");
        this.queue.add(objectKey(obj));
      }
      this.#scheduleResync();
    }, withJitter(period, 0.1));
  }
}
