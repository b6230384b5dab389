/**
 * Many deadlines on one timer. Every request of the client has a timeout, and a busy operator
 * makes thousands of requests a minute: a timer set and cleared for each cost more than the
 * bookkeeping here, where a request adds itself to a set and removes itself when done. One timer is
 * armed for the earliest deadline and set again only when a new deadline comes before it, which
 * with one timeout for all requests is never while others are in flight.
 */
import { type Clock, systemClock, type TimerId } from "./clock.ts";

/** A deadline in flight: pushed back whenever its owner makes progress, cancelled when done. */
export interface Deadline {
  /** The deadline is `ms` from now again (data arrived). */
  extend(): void;
  /** Done in time: `onExpire` is never called. */
  cancel(): void;
}

interface Entry {
  due: number;
  readonly ms: number;
  readonly onExpire: () => void;
}

export class Deadlines {
  readonly #clock: Clock;
  readonly #entries = new Set<Entry>();
  #timer: TimerId | undefined;
  /** When the armed timer fires (Infinity: none armed). */
  #armedFor = Infinity;

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
  }

  /** Deadlines not yet expired or cancelled. */
  get size(): number {
    return this.#entries.size;
  }

  /** Calls `onExpire` once, `ms` from now, unless extended or cancelled first. */
  start(ms: number, onExpire: () => void): Deadline {
    const entry: Entry = { due: this.#clock.now() + ms, ms, onExpire };
    this.#entries.add(entry);
    if (entry.due < this.#armedFor) this.#arm(entry.due);
    return {
      extend: () => {
        // Later than before: the armed timer fires first and finds it not yet due.
        if (this.#entries.has(entry)) entry.due = this.#clock.now() + entry.ms;
      },
      cancel: () => {
        this.#entries.delete(entry);
        // Nothing left to time: no timer may keep the process alive.
        if (this.#entries.size === 0) this.#disarm();
      },
    };
  }

  #arm(at: number): void {
    this.#disarm();
    this.#armedFor = at;
    this.#timer = this.#clock.setTimeout(() => this.#fire(), at - this.#clock.now());
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Infinity;
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedFor = Infinity;
    const now = this.#clock.now();
    const expired: Entry[] = [];
    let next = Infinity;
    for (const entry of this.#entries) {
      if (entry.due <= now) expired.push(entry);
      else next = Math.min(next, entry.due);
    }
    for (const entry of expired) this.#entries.delete(entry);
    if (next !== Infinity) this.#arm(next);
    for (const entry of expired) entry.onExpire();
  }
}
