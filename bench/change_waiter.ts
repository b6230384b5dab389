/**
 * Waiting on a stream of observations: whoever observes calls `changed()`, and `until(done)`
 * resolves at the first change after which `done()` holds (or at once when it holds already).
 */
export class ChangeWaiter {
  #changed: () => void = () => {};

  changed(): void {
    this.#changed();
  }

  /** Resolves once `done()` holds, checked on every change; rejects after `timeoutMs`. */
  until(done: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (done()) return resolve();
      const timer = setTimeout(() => {
        this.#changed = () => {};
        reject(new Error(`timed out after ${timeoutMs} ms: ${describe()}`));
      }, timeoutMs);
      this.#changed = () => {
        if (!done()) return;
        clearTimeout(timer);
        this.#changed = () => {};
        resolve();
      };
    });
  }

  /**
   * Resolves true once `done()` holds; false once `progress()` has not grown for `stallMs`: for
   * waits whose end depends on a component outside the bench (KWOK running pods at scale) that may
   * stop, where what was reached is still a result.
   */
  async untilOrStalled(
    done: () => boolean,
    progress: () => number,
    stallMs: number,
  ): Promise<boolean> {
    while (!done()) {
      const seen = progress();
      try {
        await this.until(() => done() || progress() > seen, stallMs, () => "");
      } catch {
        return false;
      }
    }
    return true;
  }
}
