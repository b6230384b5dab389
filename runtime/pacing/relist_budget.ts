/**
 * A token bucket shared by every watch stream of one client, spent on relists after 410 Gone.
 *
 * Each stream already backs off its own repeated 410s, but a server (or proxy) that expires every
 * watch at once makes all streams relist together, and the sum grows with the number of kinds and
 * namespaces watched. The bucket bounds that sum: a burst of one relist per stream (so a real
 * compaction, which expires every stream once, is recovered from at once) refilled at one relist
 * per stream per 10 s. A stream takes a token only when one is there (`take`): waiting streams run
 * up no debt, so when the 410s stop every stream relists within one refill round, not after the
 * queue of every relist asked for during the storm.
 */
import { type Clock, systemClock } from "../core/clock.ts";

/** The refill period of one stream's token. */
const REFILL_MS_PER_STREAM = 10_000;

export class RelistBudget {
  readonly #clock: Clock;
  readonly #onWait?: () => void;
  #streams = 0;
  #tokens = 0;
  #at: number;

  /** `onWait`: told each time a stream finds no token (for /metrics). */
  constructor(clock: Clock = systemClock, onWait?: () => void) {
    this.#clock = clock;
    this.#onWait = onWait;
    this.#at = clock.now();
  }

  /** Grows the burst and the refill rate by `n` streams (and gives their first tokens). */
  addStreams(n: number): void {
    this.#refill();
    this.#streams += n;
    this.#tokens += n;
  }

  /** How many streams share the budget. */
  get streams(): number {
    return this.#streams;
  }

  /** Tokens there now (fractions are a refill under way). */
  get tokens(): number {
    this.#refill();
    return this.#tokens;
  }

  /**
   * Takes a token and returns 0 when one is there; otherwise takes nothing and returns how long
   * until one will be (the caller waits, then asks again).
   */
  take(): number {
    this.#refill();
    if (this.#streams === 0) return 0;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    this.#onWait?.();
    return Math.ceil((1 - this.#tokens) * REFILL_MS_PER_STREAM / this.#streams);
  }

  #refill(): void {
    const now = this.#clock.now();
    const refilled = (now - this.#at) * this.#streams / REFILL_MS_PER_STREAM;
    this.#tokens = Math.min(this.#streams, this.#tokens + refilled);
    this.#at = now;
  }
}
