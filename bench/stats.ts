// Summary statistics of latency samples: the pure part of the benchmark, unit-tested.

/** A distribution of samples (milliseconds unless told otherwise). */
export interface Summary {
  count: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/**
 * The q-quantile (0 ≤ q ≤ 1) by the nearest-rank method on sorted samples: the smallest sample such
 * that at least q of all samples are ≤ it. It is always an observed value, which is what a latency
 * report should show (no interpolated latency that never happened).
 */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  if (q <= 0) return sorted[0];
  if (q >= 1) return sorted[sorted.length - 1];
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.max(0, rank - 1)];
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    count: sorted.length,
    min: sorted.length ? sorted[0] : NaN,
    p50: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
  };
}

/** Per-minute rate of a counter that grew by `delta` over `ms` milliseconds. */
export function perMinute(delta: number, ms: number): number {
  return ms > 0 ? (delta * 60_000) / ms : NaN;
}

/** a / b, NaN when b is 0. */
export function ratio(a: number, b: number): number {
  return b === 0 ? NaN : a / b;
}

/** Rounds for reports: 3 significant decimals below 10, 1 decimal below 1000, integers above. */
export function round(x: number): number {
  if (!Number.isFinite(x)) return x;
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x);
  if (a >= 10) return Math.round(x * 10) / 10;
  return Math.round(x * 1000) / 1000;
}
