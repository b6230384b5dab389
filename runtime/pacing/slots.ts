/**
 * A bound on requests in flight: at most `limit` at once, the rest served in order.
 *
 * The client's writes go through one (`--max-writes-in-flight`). A burst of reconciles (a
 * thousand primaries applied at once) would otherwise put every reconcile's writes on the
 * apiserver together. The apiserver serves them, but on a small control plane they take its CPU
 * from everyone else's requests, including the user's own creates, and finishing sooner is not
 * what the extra concurrency buys: past about eight writes in flight the apiserver's throughput no
 * longer grows, only its queue.
 *
 * The watchers' lists go through another, of one (runtime/manager.ts): a list streams as fast as
 * the apiserver answers from its watch cache, and while the process parses one, the bytes of the
 * others pile up in the HTTP client's buffers, memory the allocator keeps after the lists end.
 *
 * Waiters queue in lanes: a free slot goes to the oldest waiter of the first non-empty lane (lane
 * 0 first), so the write pacing layer (runtime/pacing/write_pacing.ts) can let reports wait behind the
 * writes that make the world as the spec says.
 */
export class Slots {
  #limit: number;
  #inFlight = 0;
  /** Waiters by lane, each oldest first. */
  readonly #lanes: (() => void)[][] = [];

  /** `limit` writes at once; 0 means no bound. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  get limit(): number {
    return this.#limit;
  }

  /**
   * Changes the bound. A higher one lets waiters in at once; a lower one lets none in until the
   * writes in flight have drained below it (none is cut short).
   */
  setLimit(limit: number): void {
    this.#limit = limit;
    this.#admitWaiters();
  }

  /** Lets waiters in, first lane first and oldest first in a lane, while the bound has room. */
  #admitWaiters(): void {
    for (const lane of this.#lanes) {
      while (lane !== undefined && lane.length > 0 && this.#hasRoom()) {
        this.#inFlight++;
        lane.shift()!();
      }
    }
  }

  #hasRoom(): boolean {
    return this.#limit <= 0 || this.#inFlight < this.#limit;
  }

  /** Writes holding a slot now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Writes waiting for a slot, in every lane. */
  get waiting(): number {
    return this.#lanes.reduce((n, lane) => n + (lane?.length ?? 0), 0);
  }

  /**
   * Waits for a slot, behind every waiter of a lower `lane` and the older ones of its own, and
   * returns its release (call it once, when the response is read). An abort while waiting leaves
   * the queue and rejects with the signal's reason.
   */
  async acquire(signal?: AbortSignal, lane = 0): Promise<() => void> {
    signal?.throwIfAborted();
    if (!this.#hasRoom()) {
      const waiting = this.#lanes[lane] ??= [];
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const at = waiting.indexOf(granted);
          if (at >= 0) waiting.splice(at, 1);
          reject(signal?.reason);
        };
        const granted = () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        };
        waiting.push(granted);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    } else {
      this.#inFlight++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot goes to the next waiter, unless the bound was lowered below what is in flight.
      this.#inFlight--;
      this.#admitWaiters();
    };
  }
}
