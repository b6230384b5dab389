/**
 * The operator's writes give way while the user's own requests arrive in a burst.
 *
 * A user who applies a thousand primaries at once waits for the last create. Our writes for the
 * first ones share the apiserver's CPU with those creates: on a 2-core control plane, the creates
 * took 3.1 s with one write of ours in flight and about 6 s with eight. But once the burst has
 * ended, eight in flight finish every child in a third of the time one does. So the bound follows
 * the burst: while new primaries keep arriving faster than `burstPerSecond`, at most `during`
 * writes are in flight; a second after they stop, the configured bound again. New primaries are
 * the signal because they are the user's requests as the watch sees them, with no baseline to
 * learn: a restart's initial list is not counted.
 */
import type { Clock, TimerId } from "../core/clock.ts";
import { systemClock } from "../core/clock.ts";
import type { Slots } from "./slots.ts";
import type { KubeObject, Store } from "../cache/store.ts";

export interface BurstYieldOptions {
  /** Writes in flight while a burst lasts. */
  during: number;
  /** New primaries in the last second at which a burst begins. */
  burstPerSecond: number;
  clock?: Clock;
  /** Told when a yield begins (true) and ends (false). */
  onChange?: (yielding: boolean) => void;
}

const WINDOW_MS = 1_000;

/** New primaries a second that make a burst: more than a person applies by hand. */
export const BURST_PER_SECOND = 20;

export class BurstYield {
  readonly #slots: Slots;
  readonly #normal: number;
  readonly #opts: BurstYieldOptions;
  readonly #clock: Clock;
  /** When the primaries of the last second arrived, oldest first. */
  readonly #arrivals: number[] = [];
  #timer?: TimerId;

  constructor(slots: Slots, opts: BurstYieldOptions) {
    this.#slots = slots;
    this.#normal = slots.limit;
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
  }

  /** Whether the writes are giving way now. */
  get yielding(): boolean {
    return this.#timer !== undefined;
  }

  /**
   * Counts the objects new to `store` as arrivals, not those of a (re)start's initial list;
   * returns the unsubscribe function.
   */
  follow<T extends KubeObject>(store: Store<T>): () => void {
    return store.subscribe((e) => {
      if (e.type === "added" && !e.initialList) this.arrived();
    });
  }

  /** A new primary arrived (not one of a restart's initial list). */
  arrived(): void {
    const now = this.#clock.now();
    this.#arrivals.push(now);
    this.#forgetBefore(now - WINDOW_MS);
    if (this.#arrivals.length < this.#opts.burstPerSecond) return;
    if (this.#timer === undefined) {
      this.#slots.setLimit(this.#opts.during);
      this.#opts.onChange?.(true);
    } else {
      this.#clock.clearTimeout(this.#timer);
    }
    this.#timer = this.#clock.setTimeout(() => this.#check(), WINDOW_MS);
  }

  /** Ends the yield at once, whatever the arrivals (the full bound again, no timer left). */
  stop(): void {
    if (this.#timer === undefined) return;
    this.#clock.clearTimeout(this.#timer);
    this.#end();
  }

  #check(): void {
    this.#forgetBefore(this.#clock.now() - WINDOW_MS);
    if (this.#arrivals.length >= this.#opts.burstPerSecond) {
      this.#timer = this.#clock.setTimeout(() => this.#check(), WINDOW_MS);
    } else {
      this.#end();
    }
  }

  #end(): void {
    this.#timer = undefined;
    this.#slots.setLimit(this.#normal);
    this.#opts.onChange?.(false);
  }

  #forgetBefore(t: number): void {
    while (this.#arrivals.length > 0 && this.#arrivals[0] < t) this.#arrivals.shift();
  }
}
