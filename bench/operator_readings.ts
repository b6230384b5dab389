/** What the benchmark reads of the operator process: its CPU, its reconciles and its writes. */
import { type Sample, sumOf, WRITE_VERBS } from "../testing/metrics_text.ts";
import type { OperatorProcess } from "../testing/operator_process.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU use of the operator over `ms` (percent of one core). */
export async function cpuOver(op: OperatorProcess, ms: number): Promise<number> {
  const c0 = op.cpuSeconds();
  const t0 = performance.now();
  await sleep(ms);
  return (100 * (op.cpuSeconds() - c0)) / ((performance.now() - t0) / 1000);
}

/** Reconciles so far, and whether the workqueue is empty. */
export function reconcileState(samples: Sample[]): { reconciles: number; depth: number } {
  return {
    reconciles: sumOf(samples, "reconcile_total", { controller: "minicluster" }),
    depth: sumOf(samples, "workqueue_depth", { name: "minicluster" }),
  };
}

/** Waits until a freshly started operator has reconciled `n` MiniClusters and its queue is empty. */
export async function waitInitialReconciles(op: OperatorProcess, n: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = reconcileState(await op.metrics());
    if (s.reconciles >= n && s.depth === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`restarted operator: ${s.reconciles}/${n} reconciles`);
    }
    await sleep(250);
  }
}

/**
 * The fewest writes that take a new MiniCluster to Ready: every child created once, the finalizer,
 * one status write (Ready) and that transition's Event.
 */
export function minimumWrites(children: number): number {
  return children + 1 + 1 + 1;
}

export function writesKeyed(samples: Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (s.name !== "api_requests_total" || !WRITE_VERBS.includes(s.labels.verb)) continue;
    const key = `${s.labels.verb} ${s.labels.resource}`;
    out[key] = (out[key] ?? 0) + s.value;
  }
  return out;
}
