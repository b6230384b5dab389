/**
 * A token bucket shared by every watch stream of one client, spent on relists after 410 Gone.
 *
 * Each stream already backs off its own repeated 410s, but a server (or proxy) that expires every
 * watch at once makes all streams relist together, and the sum grows with the number of kinds and
 * namespaces watched. The bucket bounds that sum: a burst of one relist per stream (so a real
 * compaction, which expires every stream once, is recovered from at once) refilled at one relist
 * per stream per 30 s, the longest per-stream backoff.
 */
import { type Clock, systemClock } from "./clock.ts";

/** The refill period of one stream's token: the watch backoff's ceiling. */
const REFILL_MS_PER_STREAM = 30_000;

export class RelistBudget {
  readonly #clock: Clock;
  #streams = 0;
  #tokens = 0;
  #at: number;

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
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

  /**
   * Takes one relist and returns how long to wait before it: 0 while tokens last, else the time
   * until its token refills (reservations queue, so waiters are served in order).
   */
  reserve(): number {
    this.#refill();
    this.#tokens -= 1;
    if (this.#tokens >= 0 || this.#streams === 0) return 0;
    return Math.ceil(-this.#tokens * REFILL_MS_PER_STREAM / this.#streams);
  }

  #refill(): void {
    const now = this.#clock.now();
    const refilled = (now - this.#at) * this.#streams / REFILL_MS_PER_STREAM;
    this.#tokens = Math.min(this.#streams, this.#tokens + refilled);
    this.#at = now;
  }
}
