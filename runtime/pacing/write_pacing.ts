/**
 * Write pacing: the one admission layer between the code that writes and the API server, holding
 * the mechanisms that decide when the process's requests go, each visible on /metrics and each
 * taking its own switch (`--pacing-off` names them; runtime/pacing/pacing.ts makes the switches of
 * the names). What each one bought, and in which benchmark, is the table of docs/write-pacing.md.
 *
 * - write slots (runtime/pacing/slots.ts): at most `maxWritesInFlight` writes in flight, the rest wait in
 *   order of priority (runtime/pacing/pacing.ts: a Lease renewal never waits, status and Events wait
 *   behind the writes that make the world as the spec says);
 * - burst yield (runtime/pacing/burst_yield.ts): fewer writes in flight while the user's creates arrive
 *   in a burst; started and stopped with the controllers (`start`, `stop`);
 * - relist budget (runtime/pacing/relist_budget.ts): the watchers' relists after 410 Gone;
 * - freshness fence (runtime/controller/freshness_fence.ts) and own writes (runtime/watch/own_writes.ts): they live
 *   beside the reconcile, are handed their switches where a program makes its controllers
 *   (`Manager.controllerPacing`) and report here.
 *
 * The layer reports through `PacingMetrics` (runtime/metrics/runtime_metrics.ts implements it); the time a
 * write waits for a slot is its own histogram, since the request's latency starts when it is sent.
 */
import { BurstYield } from "./burst_yield.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import { type FenceResult, PRIORITIES, type Priority } from "./pacing.ts";
import { RelistBudget } from "./relist_budget.ts";
import { Slots } from "./slots.ts";
import type { KubeObject, Store } from "../cache/store.ts";

/** What the layer reports; every method is called on the request's path, so each must be cheap. */
export interface PacingMetrics {
  /** A write got its slot after `seconds` (0: at once); `waited` when it found none free. */
  admitted(priority: Priority, seconds: number, waited: boolean): void;
  /** A burst yield began (true) or ended (false). */
  yielding(on: boolean): void;
  fenceRead(result: FenceResult): void;
  /** A relist after 410 found no token and waits. */
  relistWaited(): void;
  /** Read at each scrape: the state of the slots, the relist budget and the own-writes overlays. */
  collect(source: () => PacingState): void;
}

/** What the layer holds at one moment. */
export interface PacingState {
  /** The bound now (lowered while a burst lasts); 0: no bound. */
  limit: number;
  inFlight: number;
  waiting: number;
  yielding: boolean;
  /** Relist tokens left; undefined without a budget. */
  relistTokens?: number;
  ownWrites: number;
}

export interface WritePacingOptions {
  /** Writes in flight at once, Lease renewals excepted; 0: no bound. */
  maxWritesInFlight: number;
  /** The write slots' switch: off, writes are not bounded whatever `maxWritesInFlight` says. */
  writeSlots?: boolean;
  /** The burst yield's switch: off, `yieldToBursts` lowers nothing. */
  burstYield?: boolean;
  /** The relist budget's switch: off, the watchers relist after 410 Gone unbudgeted. */
  relistBudget?: boolean;
  metrics?: PacingMetrics;
  clock?: Clock;
}

export interface BurstOptions {
  /** Writes in flight while a burst lasts; 0: no yield. */
  during: number;
  /** New objects a second at which a burst begins. */
  burstPerSecond: number;
}

export class WritePacing {
  readonly slots: Slots;
  /** Shared by every watch stream of the manager; undefined when switched off. */
  readonly relistBudget?: RelistBudget;
  readonly #burstYield: boolean;
  readonly #metrics?: PacingMetrics;
  readonly #clock: Clock;
  readonly #ownWrites: { readonly entries: number }[] = [];
  #burst?: { yield: BurstYield; store: Store<KubeObject> };
  #unfollow?: () => void;

  constructor(opts: WritePacingOptions) {
    this.#burstYield = opts.burstYield ?? true;
    this.#metrics = opts.metrics;
    this.#clock = opts.clock ?? systemClock;
    this.slots = new Slots((opts.writeSlots ?? true) ? opts.maxWritesInFlight : 0);
    if (opts.relistBudget ?? true) {
      this.relistBudget = new RelistBudget(this.#clock, () => this.#metrics?.relistWaited());
    }
    this.#metrics?.collect(() => this.state);
  }

  /**
   * Waits for a write slot at `priority` and returns its release (call it once, when the response
   * is read); a `critical` write takes none.
   */
  async admit(priority: Priority = "normal", signal?: AbortSignal): Promise<() => void> {
    if (priority === "critical") return () => {};
    const start = this.#clock.now();
    const free = this.slots.limit <= 0 || this.slots.inFlight < this.slots.limit;
    const release = await this.slots.acquire(signal, PRIORITIES.indexOf(priority));
    this.#metrics?.admitted(priority, (this.#clock.now() - start) / 1000, !free);
    return release;
  }

  /**
   * Lowers the write bound to `opts.during` while objects new to `store` arrive in a burst
   * (runtime/pacing/burst_yield.ts), once `start` is called. Nothing when switched off, when `during` is
   * 0 or when the writes have no bound to lower.
   */
  yieldToBursts<T extends KubeObject>(store: Store<T>, opts: BurstOptions): void {
    if (!this.#burstYield || opts.during <= 0 || this.slots.limit <= 0) return;
    this.#burst = {
      store: store as unknown as Store<KubeObject>,
      yield: new BurstYield(this.slots, {
        ...opts,
        clock: this.#clock,
        onChange: (on) => this.#metrics?.yielding(on),
      }),
    };
  }

  /** Whether the writes give way to a burst now. */
  get yielding(): boolean {
    return this.#burst?.yield.yielding ?? false;
  }

  /** Starts following the bursts (the manager calls it as the controllers start). */
  start(): void {
    if (!this.#burst || this.#unfollow) return;
    this.#unfollow = this.#burst.yield.follow(this.#burst.store);
  }

  /** Stops following the bursts and ends a yield in progress (the full bound again). */
  stop(): void {
    this.#unfollow?.();
    this.#unfollow = undefined;
    this.#burst?.yield.stop();
  }

  /** A freshness fence read the live primary (the fence's switch reports here, see the manager). */
  fenceRead(result: FenceResult): void {
    this.#metrics?.fenceRead(result);
  }

  /** Reports `source.entries`, the writes an own-writes overlay remembers, on /metrics. */
  trackOwnWrites(source: { readonly entries: number }): void {
    this.#ownWrites.push(source);
  }

  /** What the layer holds now (also what /metrics shows at each scrape). */
  get state(): PacingState {
    return {
      limit: this.slots.limit,
      inFlight: this.slots.inFlight,
      waiting: this.slots.waiting,
      yielding: this.yielding,
      relistTokens: this.relistBudget?.tokens,
      ownWrites: this.#ownWrites.reduce((n, o) => n + o.entries, 0),
    };
  }
}
