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
 */
export class Slots {
  #limit: number;
  #inFlight = 0;
  readonly #waiting: (() => void)[] = [];

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

  /** Lets waiters in, oldest first, while the bound has room. */
  #admitWaiters(): void {
    while (this.#waiting.length > 0 && this.#hasRoom()) {
      this.#inFlight++;
      this.#waiting.shift()!();
    }
  }

  #hasRoom(): boolean {
    return this.#limit <= 0 || this.#inFlight < this.#limit;
  }

  /** Writes holding a slot now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Writes waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Waits for a slot and returns its release (call it once, when the response is read). An abort
   * while waiting leaves the queue and rejects with the signal's reason.
   */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (!this.#hasRoom()) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const at = this.#waiting.indexOf(granted);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(signal?.reason);
        };
        const granted = () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        };
        this.#waiting.push(granted);
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
