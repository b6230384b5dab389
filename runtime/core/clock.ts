/**
 * Time as a dependency.
 *
 * Everything in the runtime that waits (workqueue delays, backoff, resync, lease renewal) takes a
 * `Clock` instead of calling `setTimeout`/`Date.now` directly, so that unit tests drive time by hand
 * with `FakeClock` and are exact and instant instead of sleeping and flaky. Every timer's delay is
 * bounded here (`timerDelay`), for both clocks alike.
 */

/** Opaque handle of a scheduled callback. */
export type TimerId = ReturnType<typeof setTimeout> | number;

export interface Clock {
  /** Milliseconds since the epoch (or since the fake clock's origin). */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerId;
  clearTimeout(id: TimerId): void;
}

/**
 * The longest delay a timer takes: the event loop keeps it as a signed 32-bit millisecond count
 * (about 24.8 days), and a longer one overflows and fires after 1 ms.
 */
export const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * The delay a timer of `ms` is set for: at most the longest one, so a far deadline (a TTL of
 * months) fires early once and its owner, deciding from the time then, sets the next timer; a
 * negative delay or one that is no number is 0.
 */
function timerDelay(ms: number): number {
  return ms > 0 ? Math.min(ms, LONGEST_TIMER_MS) : 0;
}

/** The real clock. Timers are unref'd nowhere: callers clear what they start. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, timerDelay(ms)),
  clearTimeout: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
};

/**
 * Resolves after `ms` on `clock`, or early (without rejecting) when `signal` aborts, so loops can
 * check their stop condition right after the wait.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const onAbort = () => {
      clock.clearTimeout(id);
      resolve();
    };
    const id = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

interface FakeTimer {
  id: number;
  due: number;
  /** Insertion order, so timers due at the same instant fire in the order they were set. */
  seq: number;
  fn: () => void;
}

/**
 * A clock that only moves when told to. `advance(ms)` fires every timer that falls due in order,
 * letting promise continuations run between timers, as the real event loop would. A delay is
 * bounded as the system clock bounds it, so a test sees what the operator would.
 */
export class FakeClock implements Clock {
  #now: number;
  #timers = new Map<number, FakeTimer>();
  #nextId = 1;
  #seq = 0;

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): number {
    const id = this.#nextId++;
    this.#timers.set(id, { id, due: this.#now + timerDelay(ms), seq: this.#seq++, fn });
    return id;
  }

  clearTimeout(id: TimerId): void {
    if (typeof id === "number") this.#timers.delete(id);
  }

  /** Number of timers still scheduled (a test can assert nothing was left behind). */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing due timers one by one in due order. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await settle();
    for (;;) {
      const next = this.#earliest();
      if (!next || next.due > target) break;
      this.#timers.delete(next.id);
      this.#now = Math.max(this.#now, next.due);
      next.fn();
      await settle();
    }
    this.#now = target;
    await settle();
  }

  #earliest(): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.#timers.values()) {
      if (!best || t.due < best.due || (t.due === best.due && t.seq < best.seq)) best = t;
    }
    return best;
  }
}

/**
 * Lets pending promise continuations run. A macrotask turn (setTimeout 0 of the real loop) flushes
 * all microtasks queued so far, including chains several `await`s deep.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
