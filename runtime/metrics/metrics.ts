/**
 * A tiny Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * exposition format 0.0.4.
 *
 * Hand-written rather than taken from a package on purpose: the operator needs a dozen metrics and
 * one output format, and the usual client libraries bring default collectors, timers and
 * dependency trees that cost start-up time and resident memory in a process meant to stay small.
 * The surface here is small enough to read in one sitting and to pin down with golden tests.
 */

export type Labels = Record<string, string | number | boolean>;

/** Content-Type of `render()`'s output. */
export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Prometheus' default histogram buckets (seconds), a fit for request latencies. */
export const DEFAULT_BUCKETS: readonly number[] = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

/** `count` buckets growing by `factor` from `start`: (0.001, 2, 4) → 0.001, 0.002, 0.004, 0.008. */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  if (start <= 0 || factor <= 1 || count < 1) throw new Error("invalid exponential buckets");
  return Array.from({ length: count }, (_, i) => start * factor ** i);
}

export interface MetricOptions {
  name: string;
  help: string;
  labelNames?: readonly string[];
}

export interface HistogramOptions extends MetricOptions {
  /** Upper bounds, ascending; +Inf is implicit. */
  buckets?: readonly number[];
}

type MetricType = "counter" | "gauge" | "histogram";

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Shared bookkeeping of a metric family: name, help, label validation and series keys. */
abstract class Metric<S> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  abstract readonly type: MetricType;
  /** Series by their rendered label string (`{a="x",b="y"}`), which doubles as a stable key. */
  protected readonly series: Map<string, S> = new Map<string, S>();

  constructor(opts: MetricOptions) {
    if (!METRIC_NAME.test(opts.name)) throw new Error(`invalid metric name "${opts.name}"`);
    for (const l of opts.labelNames ?? []) {
      if (!LABEL_NAME.test(l) || l.startsWith("__")) {
        throw new Error(`invalid label name "${l}" on ${opts.name}`);
      }
    }
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = [...(opts.labelNames ?? [])];
  }

  /** The series for `labels`, created on first use. Unknown labels are a programming error. */
  protected seriesFor(labels: Labels | undefined, create: () => S): S {
    const key = this.labelKey(labels);
    let s = this.series.get(key);
    if (s === undefined) {
      s = create();
      this.series.set(key, s);
    }
    return s;
  }

  protected labelKey(labels: Labels | undefined): string {
    if (labels) {
      for (const k in labels) {
        if (!this.labelNames.includes(k)) throw new Error(`unknown label "${k}" on ${this.name}`);
      }
    }
    if (this.labelNames.length === 0) return "";
    // Every request and reconcile counts in a few series: the rendered (escaped) label string is
    // made once per series, found again by the values' length-prefixed concatenation.
    const values = this.#values(labels);
    let key = this.#rendered.get(values);
    if (key === undefined) {
      // Missing labels render as empty values, which Prometheus treats as absent.
      key = renderLabels(this.labelNames.map((n) => [n, String(labels?.[n] ?? "")]));
      this.#rendered.set(values, key);
    }
    return key;
  }

  /** Rendered label strings by their values (see `labelKey`). */
  readonly #rendered = new Map<string, string>();

  #values(labels: Labels | undefined): string {
    let values = "";
    for (const n of this.labelNames) {
      const v = String(labels?.[n] ?? "");
      values += `${v.length}:${v}`;
    }
    return values;
  }

  /** Forgets every series (e.g. the gauges of a queue that was shut down). */
  reset(): void {
    this.series.clear();
    this.#rendered.clear();
  }

  /** Forgets one series. */
  remove(labels?: Labels): void {
    this.series.delete(this.labelKey(labels));
    this.#rendered.delete(this.#values(labels));
  }

  abstract renderSamples(out: string[]): void;

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`);
    out.push(`# TYPE ${this.name} ${this.type}`);
    this.renderSamples(out);
  }

  protected sortedSeries(): [string, S][] {
    return [...this.series.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }
}

/** A value that only goes up (requests, errors, restarts). */
export class Counter extends Metric<{ value: number }> {
  readonly type = "counter";

  inc(labels?: Labels, value = 1): void {
    if (value < 0 || Number.isNaN(value)) throw new Error(`${this.name}: counters only go up`);
    this.seriesFor(labels, () => ({ value: 0 })).value += value;
  }

  get(labels?: Labels): number {
    return this.series.get(this.labelKey(labels))?.value ?? 0;
  }

  renderSamples(out: string[]): void {
    for (const [key, s] of this.sortedSeries()) {
      out.push(`${this.name}${key} ${formatValue(s.value)}`);
    }
  }
}

/** A value that goes up and down (queue depth, leader or not). */
export class Gauge extends Metric<{ value: number }> {
  readonly type = "gauge";

  set(value: number): void;
  set(labels: Labels, value: number): void;
  set(a: Labels | number, b?: number): void {
    const [labels, value] = typeof a === "number" ? [undefined, a] : [a, b ?? 0];
    this.seriesFor(labels, () => ({ value: 0 })).value = value;
  }

  inc(labels?: Labels, value = 1): void {
    this.seriesFor(labels, () => ({ value: 0 })).value += value;
  }

  dec(labels?: Labels, value = 1): void {
    this.inc(labels, -value);
  }

  get(labels?: Labels): number {
    return this.series.get(this.labelKey(labels))?.value ?? 0;
  }

  renderSamples(out: string[]): void {
    for (const [key, s] of this.sortedSeries()) {
      out.push(`${this.name}${key} ${formatValue(s.value)}`);
    }
  }
}

interface HistogramSeries {
  /** Per-bucket (not cumulative) counts; the last slot is the +Inf bucket. */
  counts: number[];
  sum: number;
  count: number;
}

/** A distribution of observations (durations) in fixed buckets. */
export class Histogram extends Metric<HistogramSeries> {
  readonly type = "histogram";
  readonly buckets: readonly number[];

  constructor(opts: HistogramOptions) {
    super(opts);
    if (this.labelNames.includes("le")) throw new Error(`${opts.name}: "le" is reserved`);
    const buckets = [...(opts.buckets ?? DEFAULT_BUCKETS)].filter((b) => b !== Infinity);
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i] > buckets[i - 1])) throw new Error(`${opts.name}: buckets must ascend`);
    }
    this.buckets = buckets;
  }

  observe(value: number): void;
  observe(labels: Labels, value: number): void;
  observe(a: Labels | number, b?: number): void {
    const [labels, value] = typeof a === "number" ? [undefined, a] : [a, b ?? 0];
    const s = this.seriesFor(labels, () => ({
      counts: new Array(this.buckets.length + 1).fill(0),
      sum: 0,
      count: 0,
    }));
    let i = this.buckets.findIndex((upper) => value <= upper);
    if (i === -1) i = this.buckets.length;
    s.counts[i]++;
    s.sum += value;
    s.count++;
  }

  /** Starts timing; the returned function observes the elapsed seconds and returns them. */
  startTimer(labels?: Labels): () => number {
    const start = performance.now();
    return () => {
      const seconds = (performance.now() - start) / 1000;
      if (labels) this.observe(labels, seconds);
      else this.observe(seconds);
      return seconds;
    };
  }

  /** Number of observations of a series (handy in tests). */
  count(labels?: Labels): number {
    return this.series.get(this.labelKey(labels))?.count ?? 0;
  }

  renderSamples(out: string[]): void {
    for (const [key, s] of this.sortedSeries()) {
      let cumulative = 0;
      const bounds = [...this.buckets.map(formatValue), "+Inf"];
      bounds.forEach((le, i) => {
        cumulative += s.counts[i];
        out.push(`${this.name}_bucket${withLabel(key, "le", le)} ${cumulative}`);
      });
      out.push(`${this.name}_sum${key} ${formatValue(s.sum)}`);
      out.push(`${this.name}_count${key} ${s.count}`);
    }
  }
}

type AnyMetric = Counter | Gauge | Histogram;

export class Registry {
  readonly #metrics = new Map<string, AnyMetric>();
  readonly #collectors: (() => void)[] = [];

  counter(opts: MetricOptions): Counter {
    return this.#register(opts, "counter", () => new Counter(opts));
  }

  gauge(opts: MetricOptions): Gauge {
    return this.#register(opts, "gauge", () => new Gauge(opts));
  }

  histogram(opts: HistogramOptions): Histogram {
    return this.#register(opts, "histogram", () => new Histogram(opts));
  }

  /** Runs `fn` before every render, to refresh gauges from live state (queue depth, RSS). */
  onCollect(fn: () => void): void {
    this.#collectors.push(fn);
  }

  get(name: string): AnyMetric | undefined {
    return this.#metrics.get(name);
  }

  /** The text exposition format 0.0.4; metric families in registration order. */
  render(): string {
    for (const collect of this.#collectors) collect();
    const out: string[] = [];
    for (const m of this.#metrics.values()) m.render(out);
    return out.length === 0 ? "" : out.join("\n") + "\n";
  }

  /**
   * Registering the same name again with the same type and labels returns the existing metric,
   * so independent components (two controllers) can share a family; anything else is an error.
   */
  #register<M extends AnyMetric>(opts: MetricOptions, type: MetricType, create: () => M): M {
    const existing = this.#metrics.get(opts.name);
    if (existing) {
      const sameLabels = existing.labelNames.join(",") === (opts.labelNames ?? []).join(",");
      if (existing.type !== type || !sameLabels) {
        throw new Error(`metric ${opts.name} already registered with another type or labels`);
      }
      return existing as M;
    }
    const m = create();
    this.#metrics.set(opts.name, m);
    return m;
  }
}

/** Adds `process_resident_memory_bytes`, heap gauges and `process_start_time_seconds`. */
export function registerProcessMetrics(registry: Registry): void {
  const rss = registry.gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
  });
  const heap = registry.gauge({
    name: "deno_heap_used_bytes",
    help: "V8 heap in use, in bytes.",
  });
  const start = registry.gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since unix epoch in seconds.",
  });
  start.set(Math.round((Date.now() - performance.now()) / 1000));
  registry.onCollect(() => {
    const mem = Deno.memoryUsage();
    rss.set(mem.rss);
    heap.set(mem.heapUsed);
  });
}

/** Number formatting of the text format: Go-parsable floats, with +Inf/-Inf/NaN spelled out. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** HELP text escapes backslash and newline. */
function escapeHelp(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/** Label values escape backslash, double quote and newline. */
export function escapeLabelValue(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function renderLabels(pairs: [string, string][]): string {
  if (pairs.length === 0) return "";
  return `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(",")}}`;
}

/** Adds one label to an already rendered label string (for histogram `le`). */
function withLabel(key: string, name: string, value: string): string {
  const pair = `${name}="${escapeLabelValue(value)}"`;
  return key === "" ? `{${pair}}` : `${key.slice(0, -1)},${pair}}`;
}
