/**
 * Exponential backoff, the one policy every retry in the runtime uses: the watcher after a failed
 * list or watch (0.8 s doubling to 30 s, jittered so that many operators restarting together do not
 * hit a recovering apiserver in lock-step) and the workqueue after a failed reconcile (5 ms doubling
 * to a cap, per key).
 */

export interface BackoffPolicy {
  /** Delay of the first retry, in ms. */
  initialMs: number;
  /** No delay exceeds this, in ms. */
  maxMs: number;
  /** Growth per attempt; 2 doubles. */
  factor?: number;
  /**
   * Fraction of the delay that is randomised: 0.2 spreads a 1000 ms delay over 800..1200 ms.
   * Jitter never pushes a delay above `maxMs`.
   */
  jitter?: number;
}

/** The watcher's policy: about 0.8 s up to 30 s, ±20 %. */
export const WATCH_BACKOFF: BackoffPolicy = {
  initialMs: 800,
  maxMs: 30_000,
  factor: 2,
  jitter: 0.2,
};

/**
 * The delay before retry number `attempt` (1-based), without jitter: initial × factor^(attempt-1),
 * capped. Pure, so the growth and the cap are unit-tested directly.
 */
export function backoffDelay(policy: BackoffPolicy, attempt: number): number {
  const factor = policy.factor ?? 2;
  const n = Math.max(1, Math.floor(attempt));
  // Exponentiation overflows to Infinity long before the cap matters, and min() handles that.
  return Math.min(policy.maxMs, policy.initialMs * Math.pow(factor, n - 1));
}

/** `ms` spread by ±`fraction`, clamped to [0, max]. `random` is injectable for tests. */
export function withJitter(
  ms: number,
  fraction: number,
  max = Infinity,
  random: () => number = Math.random,
): number {
  if (fraction <= 0) return Math.min(ms, max);
  const spread = ms * fraction * (2 * random() - 1);
  return Math.max(0, Math.min(max, Math.round(ms + spread)));
}

/** A retry counter over a policy: `next()` gives the next delay, `reset()` after a success. */
export class Backoff {
  #attempts = 0;

  constructor(
    readonly policy: BackoffPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  /** Failures since the last reset. */
  get attempts(): number {
    return this.#attempts;
  }

  next(): number {
    this.#attempts++;
    const base = backoffDelay(this.policy, this.#attempts);
    return withJitter(base, this.policy.jitter ?? 0, this.policy.maxMs, this.random);
  }

  reset(): void {
    this.#attempts = 0;
  }
}
