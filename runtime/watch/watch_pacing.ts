/**
 * How long a list+watch stream waits before going on (watch_step.ts says which `Pause`): five rules
 * that keep a recovering or misbehaving API server from being stormed.
 *
 * 1. Progress resets the error backoff: a completed list or any event.
 * 2. A watch that closed at once with nothing in it waits the error backoff, so a server that
 *    closes every watch does not make the stream spin.
 * 3. The first relist after 410 Gone is immediate; 410s in a row (no event between them, as from a
 *    server or proxy that expires every watch at once) wait a backoff of their own, reset by an
 *    event.
 * 4. A relist after 410 also spends a token of the relist budget shared by the client's watchers
 *    (relist_budget.ts), waiting for one when there is none: their sum stays bounded.
 * 5. Any other failure waits the error backoff, with jitter (0.8 s doubling to 30 s by default), so
 *    that clients do not retry in step.
 */
import { Backoff, type BackoffPolicy, WATCH_BACKOFF } from "../pacing/backoff.ts";
import type { RelistBudget } from "../pacing/relist_budget.ts";
import type { Pause } from "./watch_step.ts";

export class WatchPacing {
  readonly #errors: Backoff;
  readonly #gone: Backoff;
  readonly #budget?: RelistBudget;

  constructor(
    policy: BackoffPolicy = WATCH_BACKOFF,
    budget?: RelistBudget,
    random: () => number = Math.random,
  ) {
    this.#errors = new Backoff(policy, random);
    this.#gone = new Backoff(policy, random);
    this.#budget = budget;
  }

  /** Failures since the last progress (for the log). */
  get attempts(): number {
    return this.#errors.attempts;
  }

  /** A list completed (rule 1). */
  listed(): void {
    this.#errors.reset();
  }

  /** An event arrived (rules 1 and 3). */
  received(): void {
    this.#errors.reset();
    this.#gone.reset();
  }

  /** Milliseconds to wait for `pause` (rules 2, 3 and 5); then, for a relist, `relistWait`. */
  delay(pause: Pause): number {
    switch (pause.type) {
      case "closed-at-once":
      case "error":
        return this.#errors.next();
      case "relist":
        return pause.again ? this.#gone.next() : 0;
    }
  }

  /**
   * Takes a relist token and returns 0, or returns how long to wait before asking again (rule 4).
   * Without a budget, 0.
   */
  relistWait(): number {
    return this.#budget?.take() ?? 0;
  }
}
