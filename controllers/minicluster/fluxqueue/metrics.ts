/**
 * Flux's queues on /metrics: per MiniCluster that asks for its queue (labels namespace and name),
 * the last report's numbers while it is current (removed when a read fails, so a scaler sees no
 * number rather than an old one) and whether it is; and for the poller as a whole, its reads by
 * result and how long they took. 13 series per MiniCluster: at 1,000, 13,000 series.
 */
import type { Registry } from "../../../runtime/metrics/metrics.ts";
import type { FluxQueueSnapshot } from "./report.ts";

/** How a read ended (the counter's `result` label). */
export type ReadResult = "observed" | "unreachable" | "invalid" | "flux_error" | "stale";

export const FLUX_QUEUE_METRICS = {
  jobs: "minicluster_flux_jobs",
  nodes: "minicluster_flux_nodes",
  cores: "minicluster_flux_cores",
  pendingNodes: "minicluster_flux_pending_nodes",
  largestPendingJobNodes: "minicluster_flux_largest_pending_job_nodes",
  observed: "minicluster_flux_queue_observed",
  reads: "minicluster_flux_queue_reads_total",
  readSeconds: "minicluster_flux_queue_read_seconds",
} as const;

const OF = ["namespace", "name"];

export class FluxQueueMetrics {
  readonly #jobs;
  readonly #nodes;
  readonly #cores;
  readonly #pendingNodes;
  readonly #largest;
  readonly #observed;
  readonly #reads;
  readonly #readSeconds;

  constructor(registry: Registry) {
    const m = FLUX_QUEUE_METRICS;
    this.#jobs = registry.gauge({
      name: m.jobs,
      help: "Jobs of a MiniCluster's Flux instance by state (pending, running), as last reported.",
      labelNames: [...OF, "state"],
    });
    this.#nodes = registry.gauge({
      name: m.nodes,
      help: "Nodes of a MiniCluster's Flux instance by state (total, free, allocated, down).",
      labelNames: [...OF, "state"],
    });
    this.#cores = registry.gauge({
      name: m.cores,
      help: "Cores of a MiniCluster's Flux instance by state (total, free, allocated, down).",
      labelNames: [...OF, "state"],
    });
    this.#pendingNodes = registry.gauge({
      name: m.pendingNodes,
      help: "Nodes the pending jobs of a MiniCluster's Flux instance ask for together.",
      labelNames: OF,
    });
    this.#largest = registry.gauge({
      name: m.largestPendingJobNodes,
      help: "Nodes the largest pending job of a MiniCluster's Flux instance asks for.",
      labelNames: OF,
    });
    this.#observed = registry.gauge({
      name: m.observed,
      help: "1 while the last read of a MiniCluster's Flux queue gave a current report, else 0.",
      labelNames: OF,
    });
    this.#reads = registry.counter({
      name: m.reads,
      help: "Reads of the lead brokers' queue reporters by result (observed, unreachable, " +
        "invalid, flux_error, stale).",
      labelNames: ["result"],
    });
    this.#readSeconds = registry.histogram({
      name: m.readSeconds,
      help: "Seconds a read of a lead broker's queue reporter took (timed out reads included).",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5],
    });
  }

  /** A read ended with `result` after `seconds`. */
  read(result: ReadResult, seconds: number): void {
    this.#reads.inc({ result });
    this.#readSeconds.observe(seconds);
  }

  /** The current report of `namespace/name`. */
  observed(namespace: string, name: string, s: FluxQueueSnapshot): void {
    const of = { namespace, name };
    this.#jobs.set({ ...of, state: "pending" }, s.jobs.pending);
    this.#jobs.set({ ...of, state: "running" }, s.jobs.running);
    for (const [gauge, counts] of [[this.#nodes, s.nodes], [this.#cores, s.cores]] as const) {
      for (const state of STATES) gauge.set({ ...of, state }, counts[state]);
    }
    this.#pendingNodes.set(of, s.pendingNodes);
    this.#largest.set(of, s.largestPendingJobNodes);
    this.#observed.set(of, 1);
  }

  /** No current report of `namespace/name`: its numbers go, `observed` says 0. */
  unobserved(namespace: string, name: string): void {
    this.#removeNumbers(namespace, name);
    this.#observed.set({ namespace, name }, 0);
  }

  /** `namespace/name` no longer asks (or is gone): every series of it goes. */
  forget(namespace: string, name: string): void {
    this.#removeNumbers(namespace, name);
    this.#observed.remove({ namespace, name });
  }

  #removeNumbers(namespace: string, name: string): void {
    const of = { namespace, name };
    for (const state of ["pending", "running"]) this.#jobs.remove({ ...of, state });
    for (const gauge of [this.#nodes, this.#cores]) {
      for (const state of STATES) gauge.remove({ ...of, state });
    }
    this.#pendingNodes.remove(of);
    this.#largest.remove(of);
  }
}

const STATES = ["total", "free", "allocated", "down"] as const;
