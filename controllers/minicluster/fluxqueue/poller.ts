/**
 * The poller beside the reconciler that reads the lead brokers' queue reporters.
 *
 * A reconcile never waits for a lead broker: it tells the poller what its MiniCluster wants read
 * (`follow`, lead.ts: the lead pod's IP and the spec's port and interval; no IO) and gets back the
 * last observation, which goes into the status report. The poller reads on its own timer, one
 * timer per MiniCluster that asks, each read bounded in time (`timeoutMs`, 2 s) and in size
 * (report.ts), at most `maxInFlight` (32) at once across all MiniClusters: a slow fleet stretches
 * the intervals, it never piles reads up. When a read changes what the status would show, it wakes
 * that MiniCluster's reconcile (`wake`), which writes the status as any other status (paced,
 * status_writer.ts): observations in memory feed the status report, never the children.
 *
 * Timing: the first read when a lead pod is first seen running, then every interval after the end
 * of the previous read; during the reporter's first minute, and after a first failed read that
 * follows a report, again after at most `retryMs` (5 s). Flapping is damped twice: the reporter's first minute
 * (`startGraceMs`: the broker and its reporter start after the pod runs) is `WaitingForReport`,
 * never a problem; and once a report was read, one failed read keeps the last report (an Event
 * only when two in a row fail).
 */
import { type Clock, systemClock, type TimerId } from "../../../runtime/core/clock.ts";
import { type RuntimeLog, silentLog } from "../../../runtime/core/log.ts";
import { Registry } from "../../../runtime/metrics/metrics.ts";
import { Slots } from "../../../runtime/pacing/slots.ts";
import { QUEUE_REPORT_HTTP_PATH } from "../children/scripts/queue-report.ts";
import type { FluxQueueWant, LeadPod } from "./lead.ts";
import { FluxQueueMetrics, type ReadResult } from "./metrics.ts";
import {
  FLUX_UNREADABLE,
  type FluxQueueObservation,
  type FluxQueueReason,
  LEAD_NOT_RUNNING,
  LEAD_UNREACHABLE,
  OBSERVED,
  observedMessage,
  REPORT_INVALID,
  REPORT_STALE,
  sameObservation,
  WAITING_FOR_REPORT,
} from "./observation.ts";
import { MAX_REPORT_BYTES, parseReport } from "./report.ts";

/** What a read of a reporter answered. */
export interface ReadAnswer {
  status: number;
  text: string;
}

/** Reads `url` (GET), honouring `signal`; throws on a failed connection. */
export type ReadFn = (url: string, signal: AbortSignal) => Promise<ReadAnswer>;

/** What the reconciler needs of the poller (a test may hand it another). */
export interface FluxQueueSource {
  /**
   * `key`'s MiniCluster wants `want` read (undefined: it does not ask); returns what is known now.
   * `signal` is the controller's: when it aborts, the poller stops.
   */
  follow(
    key: string,
    want: FluxQueueWant | undefined,
    signal?: AbortSignal,
  ): FluxQueueObservation | undefined;
  /** `key`'s MiniCluster is gone. */
  forget(key: string): void;
}

export interface FluxQueuePollerOptions {
  /** Reconcile `key` soon: what its status would show changed. */
  wake?: (key: string) => void;
  clock?: Clock;
  /** How a reporter is read; `fetch` by default. */
  read?: ReadFn;
  /** Reads in flight at most, across all MiniClusters. */
  maxInFlight?: number;
  /** How long a read may take. */
  timeoutMs?: number;
  /** How long after the first read of a lead pod its silence is still its start. */
  startGraceMs?: number;
  /** How soon to read again while the reporter has not answered yet, or after a failed read. */
  retryMs?: number;
  /** Where the metrics go (the manager's, /metrics). */
  metrics?: Registry;
  log?: RuntimeLog;
}

export const POLLER_DEFAULTS = {
  maxInFlight: 32,
  timeoutMs: 2_000,
  startGraceMs: 60_000,
  retryMs: 5_000,
} as const;

/** A report older than this many intervals (plus a margin) says Flux stopped answering. */
const STALE_INTERVALS = 3;
const STALE_MARGIN_S = 30;

interface Entry {
  /** The lead pod, port and interval read: a change starts over. */
  readonly target?: string;
  readonly lead?: LeadPod;
  readonly url?: string;
  readonly intervalMs: number;
  timer?: TimerId;
  observation: FluxQueueObservation;
  observedOnce: boolean;
  /** Failed reads in a row. */
  failures: number;
  firstReadAt?: number;
}

export class FluxQueuePoller implements FluxQueueSource {
  /** Reconcile `key` soon; settable once the controller exists. */
  wake: (key: string) => void;
  readonly #clock: Clock;
  readonly #read: ReadFn;
  readonly #slots: Slots;
  readonly #timeoutMs: number;
  readonly #startGraceMs: number;
  readonly #retryMs: number;
  readonly #metrics: FluxQueueMetrics;
  readonly #log: RuntimeLog;
  readonly #entries = new Map<string, Entry>();
  readonly #stop = new AbortController();
  readonly #boundTo = new WeakSet<AbortSignal>();

  constructor(opts: FluxQueuePollerOptions = {}) {
    this.wake = opts.wake ?? (() => {});
    this.#clock = opts.clock ?? systemClock;
    this.#read = opts.read ?? httpRead;
    this.#slots = new Slots(opts.maxInFlight ?? POLLER_DEFAULTS.maxInFlight);
    this.#timeoutMs = opts.timeoutMs ?? POLLER_DEFAULTS.timeoutMs;
    this.#startGraceMs = opts.startGraceMs ?? POLLER_DEFAULTS.startGraceMs;
    this.#retryMs = opts.retryMs ?? POLLER_DEFAULTS.retryMs;
    this.#metrics = new FluxQueueMetrics(opts.metrics ?? new Registry());
    this.#log = opts.log ?? silentLog;
  }

  /** MiniClusters followed now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Reads in flight now. */
  get inFlight(): number {
    return this.#slots.inFlight;
  }

  follow(
    key: string,
    want: FluxQueueWant | undefined,
    signal?: AbortSignal,
  ): FluxQueueObservation | undefined {
    if (signal && !this.#boundTo.has(signal)) {
      this.#boundTo.add(signal);
      signal.addEventListener("abort", () => this.stop(), { once: true });
    }
    if (!want || this.#stop.signal.aborted) {
      this.forget(key);
      return undefined;
    }
    const before = this.#entries.get(key);
    const [namespace, name] = splitKey(key);
    if (!want.lead) {
      if (before?.timer !== undefined) this.#clock.clearTimeout(before.timer);
      const observation: FluxQueueObservation = {
        reason: LEAD_NOT_RUNNING,
        message: `${want.noLead}: no queue to read`,
      };
      this.#entries.set(key, {
        intervalMs: want.intervalMs,
        observation,
        observedOnce: false,
        failures: 0,
      });
      this.#metrics.unobserved(namespace, name);
      return observation;
    }
    const { lead, port, intervalMs } = want;
    const target = `${lead.uid} ${lead.ip}:${port} ${intervalMs}`;
    if (before?.target === target) return before.observation;
    if (before?.timer !== undefined) this.#clock.clearTimeout(before.timer);
    const url = `http://${hostPort(lead.ip, port)}${QUEUE_REPORT_HTTP_PATH}`;
    const entry: Entry = {
      target,
      lead,
      url,
      intervalMs,
      observation: { ...waiting(lead, url), unread: true },
      observedOnce: false,
      failures: 0,
    };
    this.#entries.set(key, entry);
    this.#metrics.unobserved(namespace, name);
    this.#schedule(key, entry, 0);
    return entry.observation;
  }

  forget(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    if (entry.timer !== undefined) this.#clock.clearTimeout(entry.timer);
    this.#entries.delete(key);
    const [namespace, name] = splitKey(key);
    this.#metrics.forget(namespace, name);
  }

  /** Stops every timer; reads in flight end without effect. */
  stop(): void {
    this.#stop.abort();
    for (const entry of this.#entries.values()) {
      if (entry.timer !== undefined) this.#clock.clearTimeout(entry.timer);
      entry.timer = undefined;
    }
  }

  #schedule(key: string, entry: Entry, ms: number): void {
    if (this.#stop.signal.aborted) return;
    entry.timer = this.#clock.setTimeout(() => {
      entry.timer = undefined;
      void this.#poll(key, entry);
    }, ms);
  }

  /** Whether `entry` is still what `key` wants read. */
  #current(key: string, entry: Entry): boolean {
    return !this.#stop.signal.aborted && this.#entries.get(key) === entry;
  }

  async #poll(key: string, entry: Entry): Promise<void> {
    let release: () => void;
    try {
      release = await this.#slots.acquire(this.#stop.signal);
    } catch {
      return; // stopped while waiting for a slot
    }
    try {
      if (!this.#current(key, entry)) return;
      entry.firstReadAt ??= this.#clock.now();
      const started = this.#clock.now();
      const outcome = await this.#fetch(entry.url!);
      const seconds = (this.#clock.now() - started) / 1000;
      if (!this.#current(key, entry)) return;
      const [result, next] = this.#judge(entry, outcome);
      this.#metrics.read(result, seconds);
      this.#record(key, entry, next);
    } finally {
      release();
    }
    if (!this.#current(key, entry)) return;
    // Soon while the reporter may still be starting, and to confirm a first failure after a report.
    const starting = !entry.observedOnce &&
      this.#clock.now() - (entry.firstReadAt ?? 0) < this.#startGraceMs;
    const soon = starting || entry.observedOnce && entry.failures === 1;
    this.#schedule(key, entry, soon ? Math.min(entry.intervalMs, this.#retryMs) : entry.intervalMs);
  }

  /** One read, bounded by the timeout: the answer, or why there is none. */
  async #fetch(url: string): Promise<ReadAnswer | { error: string }> {
    const abort = new AbortController();
    let timer: TimerId | undefined;
    const timedOut = new Promise<{ error: string }>((resolve) => {
      timer = this.#clock.setTimeout(() => {
        abort.abort();
        resolve({ error: `no answer within ${this.#timeoutMs / 1000} s` });
      }, this.#timeoutMs);
    });
    // A read function that throws at once fails the read like one that rejects.
    const read = Promise.resolve().then(() => this.#read(url, abort.signal)).then(
      (answer) => answer,
      (e) => ({ error: errorText(e) }),
    );
    try {
      return await Promise.race([read, timedOut]);
    } finally {
      if (timer !== undefined) this.#clock.clearTimeout(timer);
    }
  }

  /** What a read's outcome makes of the observation: the metric's result and the next one. */
  #judge(
    entry: Entry,
    outcome: ReadAnswer | { error: string },
  ): [ReadResult, FluxQueueObservation] {
    const url = entry.url!;
    const pod = entry.lead!.name;
    const reporter = `the queue reporter in the lead broker's pod ${pod}`;
    if ("error" in outcome) {
      return ["unreachable", this.#failed(entry, LEAD_UNREACHABLE, `GET ${url}: ${outcome.error}`)];
    }
    if (outcome.status !== 200) {
      const message = `GET ${url}: HTTP ${outcome.status}`;
      return ["unreachable", this.#failed(entry, LEAD_UNREACHABLE, message)];
    }
    const parsed = parseReport(outcome.text);
    if (parsed.kind === "invalid") {
      const message = `GET ${url} answered, but not a queue report: ${parsed.why}`;
      return ["invalid", this.#failed(entry, REPORT_INVALID, message)];
    }
    if (parsed.kind === "fluxError") {
      if (parsed.starting && !entry.observedOnce) {
        entry.failures = 0;
        const message = `${reporter} has had no answer from Flux yet (the instance is starting)`;
        return ["flux_error", { reason: WAITING_FOR_REPORT, message }];
      }
      const message = `${reporter} could not read Flux: ${parsed.error}`;
      return ["flux_error", this.#failed(entry, FLUX_UNREADABLE, message)];
    }
    const staleAfter = STALE_INTERVALS * entry.intervalMs / 1000 + STALE_MARGIN_S;
    if (parsed.ageSeconds > staleAfter) {
      const message = `${reporter} has had no answer from Flux for more than ${staleAfter} s`;
      return ["stale", this.#failed(entry, REPORT_STALE, message)];
    }
    entry.failures = 0;
    entry.observedOnce = true;
    const snapshot = parsed.snapshot;
    return ["observed", { reason: OBSERVED, message: observedMessage(snapshot, pod), snapshot }];
  }

  /**
   * A failed read: still the reporter's start (never answered, within the grace), a blip (the
   * first failure after a report: the report stays), or the failure.
   */
  #failed(entry: Entry, reason: FluxQueueReason, message: string): FluxQueueObservation {
    entry.failures++;
    const sinceFirst = this.#clock.now() - (entry.firstReadAt ?? this.#clock.now());
    if (!entry.observedOnce && sinceFirst < this.#startGraceMs) {
      return waiting(entry.lead!, entry.url!);
    }
    if (entry.observedOnce && entry.failures < 2 && entry.observation.reason === OBSERVED) {
      return entry.observation;
    }
    return { reason, message };
  }

  #record(key: string, entry: Entry, next: FluxQueueObservation): void {
    const [namespace, name] = splitKey(key);
    if (next.reason === OBSERVED && next.snapshot) {
      this.#metrics.observed(namespace, name, next.snapshot);
    } else {
      this.#metrics.unobserved(namespace, name);
    }
    if (sameObservation(entry.observation, next)) return;
    if (entry.observation.reason !== next.reason) {
      this.#log.debug("Flux queue observation changed", {
        key,
        from: entry.observation.reason,
        to: next.reason,
      });
    }
    entry.observation = next;
    this.wake(key);
  }
}

function waiting(lead: LeadPod, url: string): FluxQueueObservation {
  return {
    reason: WAITING_FOR_REPORT,
    message:
      `waiting for the queue reporter in the lead broker's pod ${lead.name} to answer at ${url}`,
  };
}

/** "host:port", with an IPv6 address in brackets. */
function hostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function splitKey(key: string): [string, string] {
  const slash = key.indexOf("/");
  return slash < 0 ? ["", key] : [key.slice(0, slash), key.slice(slash + 1)];
}

/** A failed read in a few words: the runtime's message, on one line and bounded. */
function errorText(e: unknown): string {
  const text = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, " ").trim();
  return (text || "the read failed").slice(0, 300);
}

/**
 * The default read: a GET that follows no redirect (a 3xx is an HTTP error, so no answer can send
 * the operator elsewhere) and reads at most MAX_REPORT_BYTES + 1 bytes of the body.
 */
export async function httpRead(url: string, signal: AbortSignal): Promise<ReadAnswer> {
  const response = await fetch(url, {
    signal,
    redirect: "manual",
    headers: { accept: "application/json" },
  });
  return { status: response.status, text: await boundedText(response, MAX_REPORT_BYTES + 1) };
}

/** The body's first `max` bytes as text; the rest is not read. */
async function boundedText(response: Response, max: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(Math.min(size, max));
  let at = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, bytes.length - at);
    bytes.set(part, at);
    at += part.length;
    if (at >= bytes.length) break;
  }
  return new TextDecoder().decode(bytes);
}
