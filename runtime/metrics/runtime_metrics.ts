/**
 * The runtime's Prometheus metrics, registered once per registry and shared by components: the
 * controllers' reconciles and queues (with the work in flight, so stuck work shows), the watches,
 * the API requests, the write pacing layer, leader election and the caches' sizes.
 */
import type { Controller, ControllerMetrics, ReconcileResult } from "../controller/controller.ts";
import { DEFAULT_BUCKETS, exponentialBuckets, type Registry } from "./metrics.ts";
import type { KubeObject, Store } from "../cache/store.ts";
import type { WatcherMetrics } from "../watch/watcher.ts";
import type { PacingMetrics } from "../pacing/write_pacing.ts";

export class RuntimeMetrics {
  readonly #reconciles;
  readonly #reconcileErrors;
  readonly #reconcileSeconds;
  readonly #depth;
  readonly #adds;
  readonly #retries;
  readonly #queueSeconds;
  readonly #workSeconds;
  readonly #restarts;
  readonly #relists;
  readonly #events;
  readonly #echoedAnswers;
  readonly #notServed;
  /** The reason each (resource, namespace) is reported under, to remove its series when served. */
  readonly #notServedReasons = new Map<string, string>();
  readonly #requests;
  readonly #requestSeconds;
  readonly #leader;
  readonly #cacheObjects;
  readonly #unfinished;
  readonly #longest;
  readonly #activeWorkers;
  readonly #slotWaits;
  readonly #slotWaitSeconds;
  readonly #slots;
  readonly #yielding;
  readonly #yields;
  readonly #fenceReads;
  readonly #relistWaits;
  readonly #relistTokens;
  readonly #ownWrites;
  readonly #registry: Registry;

  constructor(registry: Registry) {
    this.#registry = registry;
    const r = registry;
    const latency = exponentialBuckets(0.001, 4, 10); // 1 ms .. ~4 min
    this.#reconciles = r.counter({
      name: "reconcile_total",
      help: "Reconciles by controller and result (success, requeue, error, terminal).",
      labelNames: ["controller", "result"],
    });
    this.#reconcileErrors = r.counter({
      name: "reconcile_errors_total",
      help: "Reconciles that failed (retried or terminal).",
      labelNames: ["controller"],
    });
    this.#reconcileSeconds = r.histogram({
      name: "reconcile_duration_seconds",
      help: "Time spent in reconcile, by controller.",
      labelNames: ["controller"],
      buckets: DEFAULT_BUCKETS,
    });
    this.#depth = r.gauge({
      name: "workqueue_depth",
      help: "Keys waiting in the workqueue.",
      labelNames: ["name"],
    });
    this.#adds = r.counter({
      name: "workqueue_adds_total",
      help: "Keys added to the workqueue.",
      labelNames: ["name"],
    });
    this.#retries = r.counter({
      name: "workqueue_retries_total",
      help: "Keys re-added with backoff after a failure.",
      labelNames: ["name"],
    });
    this.#queueSeconds = r.histogram({
      name: "workqueue_queue_duration_seconds",
      help: "Time a key waits in the workqueue before a worker takes it.",
      labelNames: ["name"],
      buckets: latency,
    });
    this.#workSeconds = r.histogram({
      name: "workqueue_work_duration_seconds",
      help: "Time a worker holds a key.",
      labelNames: ["name"],
      buckets: latency,
    });
    this.#restarts = r.counter({
      name: "watch_restarts_total",
      help: "Watch streams restarted, by reason (closed, gone, error).",
      labelNames: ["resource", "reason"],
    });
    this.#relists = r.counter({
      name: "watch_relists_total",
      help: "Complete lists (at start-up and after 410 Gone).",
      labelNames: ["resource"],
    });
    this.#events = r.counter({
      name: "watch_events_total",
      help: "Watch events received, by type.",
      labelNames: ["resource", "type"],
    });
    this.#echoedAnswers = r.counter({
      name: "api_answers_echoed_total",
      help: "Writes whose answer was the exact text of an object their watch had already " +
        "parsed (its echo, read first), taken instead of parsing the answer again " +
        "(runtime/client/echoed_answers.ts).",
      labelNames: ["resource"],
    });
    this.#notServed = r.gauge({
      name: "watch_namespace_not_served",
      help: "1 while a watched namespace refuses the list/watch of a resource (e.g. its " +
        "RoleBinding went with it), by reason; retried with backoff, the others served meanwhile.",
      labelNames: ["resource", "namespace", "reason"],
    });
    this.#requests = r.counter({
      name: "api_requests_total",
      help: "Requests to the Kubernetes API by verb, resource and HTTP code (0: no response).",
      labelNames: ["verb", "resource", "code"],
    });
    this.#requestSeconds = r.histogram({
      name: "api_request_duration_seconds",
      help: "Time to the response headers of Kubernetes API requests.",
      labelNames: ["verb", "resource"],
      buckets: DEFAULT_BUCKETS,
    });
    this.#leader = r.gauge({
      name: "leader_election_is_leader",
      help: "1 while this replica holds the Lease.",
      labelNames: ["lease"],
    });
    this.#unfinished = r.gauge({
      name: "workqueue_unfinished_work_seconds",
      help: "Seconds the keys held by workers have been held, summed: grows while work is stuck.",
      labelNames: ["name"],
    });
    this.#longest = r.gauge({
      name: "workqueue_longest_running_processor_seconds",
      help: "Seconds the longest-held key has been held by a worker.",
      labelNames: ["name"],
    });
    this.#activeWorkers = r.gauge({
      name: "controller_active_workers",
      help: "Workers in a reconcile right now, by controller.",
      labelNames: ["controller"],
    });
    this.#cacheObjects = r.gauge({
      name: "cache_objects",
      help: "Objects in the cache, by resource.",
      labelNames: ["resource"],
    });
    this.#slotWaits = r.counter({
      name: "write_slot_waits_total",
      help: "Writes that found every write slot taken and waited, by priority.",
      labelNames: ["priority"],
    });
    this.#slotWaitSeconds = r.histogram({
      name: "write_slot_wait_seconds",
      help: "Time a write waited for a write slot before it was sent (not part of " +
        "api_request_duration_seconds), by priority.",
      labelNames: ["priority"],
      buckets: latency,
    });
    this.#slots = r.gauge({
      name: "write_slots",
      help: "The write slots: limit (the bound now, 0: none), in_flight, waiting.",
      labelNames: ["state"],
    });
    this.#yielding = r.gauge({
      name: "write_burst_yielding",
      help: "1 while the writes give way to a burst of new objects (the lower bound holds).",
    });
    this.#yields = r.counter({
      name: "write_burst_yields_total",
      help: "Bursts of new objects the writes gave way to.",
    });
    this.#fenceReads = r.counter({
      name: "freshness_fence_reads_total",
      help: "Reads of the live primary by the freshness fence, by result (fresh, stale, error).",
      labelNames: ["result"],
    });
    this.#relistWaits = r.counter({
      name: "watch_relist_budget_waits_total",
      help: "Relists after 410 Gone that found no token in the relist budget and waited.",
    });
    this.#relistTokens = r.gauge({
      name: "watch_relist_tokens",
      help: "Tokens left in the relist budget shared by the watch streams.",
    });
    this.#ownWrites = r.gauge({
      name: "own_writes_entries",
      help: "Answers of this process's writes shown in place of the cache until it catches up.",
    });
  }

  readonly pacing: PacingMetrics = {
    admitted: (priority, seconds, waited) => {
      if (waited) this.#slotWaits.inc({ priority });
      this.#slotWaitSeconds.observe({ priority }, seconds);
    },
    yielding: (on) => {
      if (on) this.#yields.inc();
      this.#yielding.set(on ? 1 : 0);
    },
    fenceRead: (result) => this.#fenceReads.inc({ result }),
    relistWaited: () => this.#relistWaits.inc(),
    collect: (source) =>
      this.#registry.onCollect(() => {
        const state = source();
        this.#slots.set({ state: "limit" }, state.limit);
        this.#slots.set({ state: "in_flight" }, state.inFlight);
        this.#slots.set({ state: "waiting" }, state.waiting);
        this.#yielding.set(state.yielding ? 1 : 0);
        if (state.relistTokens !== undefined) this.#relistTokens.set(state.relistTokens);
        this.#ownWrites.set(state.ownWrites);
      }),
  };

  echoedAnswer(resource: string): void {
    this.#echoedAnswers.inc({ resource });
  }

  request(verb: string, resource: string, code: number, seconds: number): void {
    this.#requests.inc({ verb, resource, code });
    if (verb !== "watch") this.#requestSeconds.observe({ verb, resource }, seconds);
  }

  readonly watcher: WatcherMetrics = {
    restarted: (resource, reason) => this.#restarts.inc({ resource, reason }),
    relisted: (resource) => this.#relists.inc({ resource }),
    event: (resource, type) => this.#events.inc({ resource, type }),
    notServed: (resource, namespace, reason) => {
      const key = `${resource}/${namespace}`;
      const old = this.#notServedReasons.get(key);
      if (old !== undefined) this.#notServed.remove({ resource, namespace, reason: old });
      this.#notServedReasons.delete(key);
      if (reason === undefined) return;
      this.#notServedReasons.set(key, reason);
      this.#notServed.set({ resource, namespace, reason }, 1);
    },
  };

  controller(name: string): ControllerMetrics {
    return {
      reconciled: (controller: string, result: ReconcileResult, seconds: number) => {
        this.#reconciles.inc({ controller, result });
        if (result === "error" || result === "terminal") this.#reconcileErrors.inc({ controller });
        this.#reconcileSeconds.observe({ controller }, seconds);
      },
      queue: {
        added: () => this.#adds.inc({ name }),
        depth: (n) => this.#depth.set({ name }, n),
        retried: () => this.#retries.inc({ name }),
        queued: (s) => this.#queueSeconds.observe({ name }, s),
        worked: (s) => this.#workSeconds.observe({ name }, s),
      },
    };
  }

  /** Reports, at each scrape, how long the controller's work in flight has been running. */
  progress(controller: Controller<KubeObject>): void {
    const name = controller.name;
    this.#registry.onCollect(() => {
      const { totalSeconds, longestSeconds } = controller.queue.unfinishedWork();
      this.#unfinished.set({ name }, totalSeconds);
      this.#longest.set({ name }, longestSeconds);
      this.#activeWorkers.set({ controller: name }, controller.activeWorkers);
    });
  }

  leader(lease: string, leading: boolean): void {
    this.#leader.set({ lease }, leading ? 1 : 0);
  }

  cacheSize(store: Store<KubeObject>): void {
    this.#registry.onCollect(() =>
      this.#cacheObjects.set({ resource: store.resource }, store.size)
    );
  }
}
