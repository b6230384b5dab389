/**
 * The work queue between watch events and reconcile workers.
 *
 * It holds keys ("namespace/name"), never objects: a worker reads the latest object from the store
 * when it gets to the key, so ten events on one object cost one reconcile. Guarantees:
 *
 * - a key is pending at most once (adding a pending key is a no-op);
 * - a key is never handed to two workers at once: a key added while a worker holds it is parked and
 *   handed out again after that worker calls `done`;
 * - delayed adds keep only the earliest deadline per key (a later `addAfter` never postpones an
 *   earlier one, an immediate `add` supersedes any delay);
 * - `addRateLimited` delays by a per-key exponential backoff (5 ms doubling to a cap) that `forget`
 *   resets after a success;
 * - `shutDown` stops intake at once, hands no more keys out, and resolves when the in-flight keys are
 *   `done`;
 * - keys added as `urgent` are handed out before the others (each lane in order of arrival): a
 *   controller marks what a user asked for (a new or changed primary) urgent, so that under load
 *   new clusters get their children before existing ones get their status refreshed, and what the
 *   first list loads at start-up not (a new cluster does not wait behind thousands of old ones).
 *   Adding an already pending key as urgent moves it to the urgent lane; nothing ever moves a key
 *   back.
 *
 * All waiting goes through an injectable `Clock`, so tests run on fake time.
 */
import { backoffDelay, type BackoffPolicy } from "../pacing/backoff.ts";
import { type Clock, systemClock, type TimerId } from "../core/clock.ts";

/** Per-key retry policy of failed reconciles. */
const RECONCILE_BACKOFF: BackoffPolicy = { initialMs: 5, maxMs: 60_000, factor: 2 };

/** Hooks the controller wires to Prometheus metrics; the queue itself knows no registry. */
export interface WorkQueueMetrics {
  /** A key became pending (a key already pending is not counted again, as in client-go). */
  added(): void;
  /** Number of keys waiting to be handed out. */
  depth(n: number): void;
  /** A key was re-added by `addRateLimited`. */
  retried(): void;
  /** Seconds a key waited in the queue before a worker got it. */
  queued(seconds: number): void;
  /** Seconds a worker held a key (get → done). */
  worked(seconds: number): void;
}

interface WorkQueueOptions {
  clock?: Clock;
  backoff?: BackoffPolicy;
  metrics?: WorkQueueMetrics;
}

export class WorkQueue {
  readonly #clock: Clock;
  readonly #backoff: BackoffPolicy;
  readonly #metrics?: WorkQueueMetrics;

  /** Keys ready to hand out, in order. Each is also in #dirty. */
  #queue: string[] = [];
  /** Urgent keys ready to hand out, in order, before any of #queue. Each is also in #dirty. */
  #urgent: string[] = [];
  /** Dirty keys added as urgent (also those parked while a worker holds them). */
  #urgentKeys = new Set<string>();
  /** Keys that need a run: queued, or parked behind a worker that holds them. */
  #dirty = new Set<string>();
  /** Keys held by a worker, with the time it got them. */
  #processing = new Map<string, number>();
  /** When each dirty key was added, for the queue-latency metric. */
  #addedAt = new Map<string, number>();
  /** Delayed adds: one timer per key, the earliest deadline. */
  #waiting = new Map<string, { due: number; timer: TimerId }>();
  /** Consecutive failures per key, for the backoff. */
  #failures = new Map<string, number>();
  /** Workers blocked in get(). */
  #getters: Array<(key: string | undefined) => void> = [];
  #shuttingDown = false;
  /** Resolvers of shutDown() calls waiting for in-flight keys. */
  #drained: Array<() => void> = [];

  constructor(opts: WorkQueueOptions = {}) {
    this.#clock = opts.clock ?? systemClock;
    this.#backoff = opts.backoff ?? RECONCILE_BACKOFF;
    this.#metrics = opts.metrics;
  }

  /** Keys waiting to be handed out (not the delayed ones, not the in-flight ones). */
  get len(): number {
    return this.#queue.length + this.#urgent.length;
  }

  /** Keys waiting on a delay. */
  get delayed(): number {
    return this.#waiting.size;
  }

  /** Keys currently held by workers. */
  get inFlight(): number {
    return this.#processing.size;
  }

  /** Whether a worker holds `key` now (from `get` until `done`). */
  isHeld(key: string): boolean {
    return this.#processing.has(key);
  }

  /**
   * Seconds the keys held by workers have been held, summed, and the longest of them: work that
   * is stuck shows as these growing (client-go's unfinished_work and longest_running_processor).
   */
  unfinishedWork(): { totalSeconds: number; longestSeconds: number } {
    const now = this.#clock.now();
    let totalSeconds = 0;
    let longestSeconds = 0;
    for (const started of this.#processing.values()) {
      const seconds = (now - started) / 1000;
      totalSeconds += seconds;
      longestSeconds = Math.max(longestSeconds, seconds);
    }
    return { totalSeconds, longestSeconds };
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Makes `key` due now (`urgent`: before every key not added as urgent). */
  add(key: string, opts: { urgent?: boolean } = {}): void {
    if (this.#shuttingDown) return;
    this.#cancelDelay(key);
    if (opts.urgent && !this.#urgentKeys.has(key)) {
      this.#urgentKeys.add(key);
      // Already pending in the other lane: move it up.
      const at = this.#queue.indexOf(key);
      if (at >= 0) {
        this.#queue.splice(at, 1);
        this.#urgent.push(key);
      }
    }
    if (this.#dirty.has(key)) return;
    this.#metrics?.added();
    this.#dirty.add(key);
    this.#addedAt.set(key, this.#clock.now());
    // A key held by a worker waits for done(); handing it out now would run it twice at once.
    if (this.#processing.has(key)) return;
    this.#enqueue(key);
  }

  /** Makes `key` due in `ms`, unless it is already due sooner. */
  addAfter(key: string, ms: number): void {
    if (this.#shuttingDown) return;
    if (ms <= 0) return this.add(key);
    // Already due now: the pending run will decide again what comes next.
    if (this.#dirty.has(key)) return;
    const due = this.#clock.now() + ms;
    const current = this.#waiting.get(key);
    if (current && current.due <= due) return;
    if (current) this.#clock.clearTimeout(current.timer);
    const timer = this.#clock.setTimeout(() => {
      this.#waiting.delete(key);
      this.add(key);
    }, ms);
    this.#waiting.set(key, { due, timer });
  }

  /** Re-adds `key` after its next backoff delay (5 ms, 10 ms, 20 ms, ... up to the cap). */
  addRateLimited(key: string): void {
    if (this.#shuttingDown) return;
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    this.#metrics?.retried();
    this.addAfter(key, backoffDelay(this.#backoff, failures));
  }

  /** The delay the next `addRateLimited(key)` would use; for logs and tests. */
  nextBackoff(key: string): number {
    return backoffDelay(this.#backoff, (this.#failures.get(key) ?? 0) + 1);
  }

  /** Consecutive failures recorded for `key`. */
  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Clears the failure count of `key` (after a success or a terminal error). */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  /**
   * The next due key, waiting for one if none is due. Resolves `undefined` once the queue shuts
   * down: a worker loop ends there.
   */
  get(): Promise<string | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    const key = this.#urgent.shift() ?? this.#queue.shift();
    if (key !== undefined) return Promise.resolve(this.#handOut(key));
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  /** The worker is finished with `key`; if it was re-added meanwhile it becomes due again. */
  done(key: string): void {
    const started = this.#processing.get(key);
    if (started === undefined) return;
    this.#processing.delete(key);
    this.#metrics?.worked((this.#clock.now() - started) / 1000);
    if (this.#shuttingDown) {
      if (this.#processing.size === 0) this.#resolveDrained();
      return;
    }
    if (this.#dirty.has(key)) this.#enqueue(key);
  }

  /**
   * Stops intake (adds are ignored, pending and delayed keys are dropped: whoever runs next will
   * list everything again) and resolves once every key handed out has been `done`.
   */
  shutDown(): Promise<void> {
    if (!this.#shuttingDown) {
      this.#shuttingDown = true;
      for (const { timer } of this.#waiting.values()) this.#clock.clearTimeout(timer);
      this.#waiting.clear();
      this.#queue = [];
      this.#urgent = [];
      this.#urgentKeys.clear();
      this.#dirty.clear();
      this.#addedAt.clear();
      this.#metrics?.depth(0);
      for (const getter of this.#getters.splice(0)) getter(undefined);
    }
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  #enqueue(key: string): void {
    const getter = this.#getters.shift();
    if (getter) {
      getter(this.#handOut(key));
      return;
    }
    (this.#urgentKeys.has(key) ? this.#urgent : this.#queue).push(key);
    this.#metrics?.depth(this.len);
  }

  #handOut(key: string): string {
    const now = this.#clock.now();
    this.#dirty.delete(key);
    this.#urgentKeys.delete(key);
    this.#processing.set(key, now);
    const added = this.#addedAt.get(key);
    this.#addedAt.delete(key);
    if (added !== undefined) this.#metrics?.queued((now - added) / 1000);
    this.#metrics?.depth(this.len);
    return key;
  }

  #cancelDelay(key: string): void {
    const current = this.#waiting.get(key);
    if (!current) return;
    this.#clock.clearTimeout(current.timer);
    this.#waiting.delete(key);
  }

  #resolveDrained(): void {
    for (const resolve of this.#drained.splice(0)) resolve();
  }
}
