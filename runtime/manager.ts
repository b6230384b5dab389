/**
 * The manager wires an operator process together: the API client (its requests counted, its writes
 * paced by runtime/pacing/write_pacing.ts), one watcher+store per watched kind, the controllers, leader
 * election, the health/metrics server and signal handling.
 *
 * Lifecycle of `run()`:
 *   serve /healthz → start watchers → wait for every cache (bounded by --cache-sync-timeout; /readyz
 *   turns ready; a watched namespace that refuses us does not hold it up, see watcher.ts) →
 *   [leader election: wait for the Lease] → start controllers and the burst yield → run until
 *   SIGTERM / SIGINT (exit 0 after the burst yield stops, in-flight reconciles drain and the Lease
 *   is released) or until the Lease is lost (exit 1: a fresh process is the simplest way to never
 *   act on a stale view as a standby).
 *
 * Caches run on standbys too, so a standby that takes over starts reconciling at once.
 */
import { KubeClient } from "./client/client.ts";
import { systemClock, type TimerId } from "./core/clock.ts";
import { Controller, type ControllerOptions } from "./controller/controller.ts";
import { startHealthServer } from "./http.ts";
import { LeaderElector } from "./leader.ts";
import { Logger } from "./core/log.ts";
import { registerProcessMetrics, Registry } from "./metrics/metrics.ts";
import { Slots } from "./pacing/slots.ts";
import type { ManagerOptions } from "./options.ts";
import { resourceName, type ResourceType } from "./client/resources.ts";
import type { IndexFunc, KubeObject, Store } from "./cache/store.ts";
import type { Transform } from "./cache/transforms.ts";
import { RuntimeMetrics } from "./metrics/runtime_metrics.ts";
import { Watcher, WatcherError } from "./watch/watcher.ts";
import { WritePacing } from "./pacing/write_pacing.ts";
import { type RuntimeSwitches, runtimeSwitches } from "./pacing/pacing.ts";
import type { FenceSwitch } from "./controller/freshness_fence.ts";
import type { OwnWritesSwitch } from "./watch/own_writes.ts";
import type { WatchSpec } from "./cache/watch_spec.ts";

/** A server added with `addServer`, as its start returns it. */
export interface RunningServer {
  shutdown(): Promise<void>;
}

/**
 * The switches of the pacing mechanisms that live beside a reconcile, for a program to hand the
 * controllers it makes (their reports go to the manager's /metrics).
 */
export interface ControllerPacing {
  freshnessFence: FenceSwitch;
  ownWrites: OwnWritesSwitch;
}

export type ControllerSpec<T extends KubeObject> =
  & Omit<
    ControllerOptions<T>,
    "clock" | "log" | "metrics" | "concurrency" | "resyncPeriodMs"
  >
  & { concurrency?: number; resyncPeriodMs?: number };

/** How long a SIGTERM waits for in-flight reconciles before exiting anyway. */
const DRAIN_TIMEOUT_MS = 25_000;

/**
 * How long the watches get to end once the controllers stopped: nothing depends on them any more,
 * and closing the client afterwards tears down whatever is left.
 */
const WATCH_STOP_TIMEOUT_MS = 2_000;

export class Manager {
  readonly log: Logger;
  readonly registry: Registry;
  readonly #opts: ManagerOptions & { userAgent?: string };
  readonly #metrics: RuntimeMetrics;
  #client?: KubeClient;
  #watchers = new Map<
    string,
    {
      watcher: Watcher<KubeObject>;
      transform?: Transform<KubeObject>;
      indexes?: Record<string, IndexFunc<KubeObject>>;
    }
  >();
  #controllers: Controller<KubeObject>[] = [];
  #servers: { name: string; start: (client: KubeClient) => Promise<RunningServer> }[] = [];
  /** Which pacing mechanisms run, from `--pacing-off` (runtime/pacing/pacing.ts). */
  readonly switches: RuntimeSwitches;
  /**
   * The client's admission layer: write slots, burst yield, relist budget, and the reports of the
   * freshness fence and own writes (runtime/pacing/write_pacing.ts).
   */
  readonly pacing: WritePacing;
  /** One list at a time, every watcher's: see runtime/pacing/slots.ts. */
  readonly #listSlots = new Slots(1);
  #synced = false;

  /** `userAgent`: how the client introduces itself to the API server (its logs and audit). */
  constructor(
    opts: ManagerOptions & { userAgent?: string },
    log?: Logger,
    registry?: Registry,
  ) {
    this.#opts = opts;
    this.log = log ?? new Logger({ level: opts.logLevel, format: opts.logFormat });
    this.registry = registry ?? new Registry();
    this.#metrics = new RuntimeMetrics(this.registry);
    this.switches = runtimeSwitches(opts.pacingOff);
    this.pacing = new WritePacing({
      maxWritesInFlight: opts.maxWritesInFlight,
      writeSlots: this.switches.writeSlots,
      burstYield: this.switches.burstYield,
      relistBudget: this.switches.relistBudget,
      metrics: this.#metrics.pacing,
    });
  }

  /** The fence's and own writes' switches for a program's controllers, reporting to /metrics. */
  get controllerPacing(): ControllerPacing {
    return {
      freshnessFence: {
        on: this.switches.freshnessFence,
        onRead: (result) => this.pacing.fenceRead(result),
      },
      ownWrites: {
        on: this.switches.ownWrites,
        track: (source) => this.pacing.trackOwnWrites(source),
      },
    };
  }

  /** Loads the client (flags → $KUBECONFIG → in-cluster → ~/.kube/config) with metrics wired. */
  async connect(): Promise<KubeClient> {
    this.#client ??= await KubeClient.load({
      kubeconfig: this.#opts.kubeconfig,
      context: this.#opts.context,
      pacing: this.pacing,
      execPluginTimeoutMs: this.#opts.execPluginTimeoutMs,
      transport: this.#opts.apiTransport,
      userAgent: this.#opts.userAgent,
      log: this.log.child({ component: "client" }),
      onRequest: (e) => this.#metrics.request(e.verb, e.resource, e.code, e.seconds),
      onEchoedAnswer: (resource) => this.#metrics.echoedAnswer(resource),
    });
    this.log.info("API client", {
      server: this.#client.server,
      transport: this.#client.transport,
    });
    return this.#client;
  }

  get client(): KubeClient {
    if (!this.#client) throw new Error("Manager.connect() first");
    return this.#client;
  }

  /** True once every cache has completed its first list. */
  get synced(): boolean {
    return this.#synced;
  }

  /**
   * The shared store of `rt` (narrowed by selectors, in the configured namespaces). Asking twice
   * for the same kind and selectors returns the same store; asking with another transform is an
   * error (one of the callers would read objects shaped for the other).
   */
  watch<T extends KubeObject>(rt: ResourceType, spec: WatchSpec = {}): Store<T> {
    const id = `${resourceName(rt)}?${spec.labelSelector ?? ""}&${spec.fieldSelector ?? ""}`;
    const existing = this.#watchers.get(id);
    if (existing && existing.transform !== spec.transform) {
      throw new Error(`${id} is already watched with another transform`);
    }
    if (existing && !sameIndexes(existing.indexes, spec.indexes)) {
      throw new Error(`${id} is already watched with other indexes`);
    }
    let watcher = existing?.watcher;
    if (!watcher) {
      watcher = new Watcher<KubeObject>(this.client, rt, {
        namespaces: this.#opts.namespaces,
        labelSelector: spec.labelSelector,
        fieldSelector: spec.fieldSelector,
        transform: spec.transform,
        indexes: spec.indexes,
        whereServed: spec.whereServed,
        stopOnForbidden: this.#opts.failOnForbidden,
        relistBudget: this.pacing.relistBudget,
        listSlots: this.#listSlots,
        log: this.log.child({ component: "watcher" }),
        metrics: this.#metrics.watcher,
      });
      this.#watchers.set(id, { watcher, transform: spec.transform, indexes: spec.indexes });
      this.#metrics.cacheSize(watcher.store);
    }
    return watcher.store as unknown as Store<T>;
  }

  #allWatchers(): Watcher<KubeObject>[] {
    return [...this.#watchers.values()].map((w) => w.watcher);
  }

  /**
   * A server that runs beside the controllers for the whole run, on a standby too (an aggregated
   * API, say): started after the health endpoint, stopped before it. A start that fails ends the
   * run with exit code 1 and the error in the log.
   */
  addServer(name: string, start: (client: KubeClient) => Promise<RunningServer>): void {
    this.#servers.push({ name, start });
  }

  addController<T extends KubeObject>(spec: ControllerSpec<T>): Controller<T> {
    const controller = new Controller<T>({
      concurrency: this.#opts.concurrency,
      resyncPeriodMs: this.#opts.resyncPeriodMs,
      ...spec,
      log: this.log.child({ controller: spec.name }),
      metrics: this.#metrics.controller(spec.name),
    });
    this.#controllers.push(controller as unknown as Controller<KubeObject>);
    this.#metrics.progress(controller as unknown as Controller<KubeObject>);
    return controller;
  }

  /**
   * Runs until a signal or a lost Lease; resolves the process exit code. `signal` stops it like
   * SIGTERM (for embedding in tests).
   */
  async run(signal?: AbortSignal): Promise<number> {
    const log = this.log;
    const client = await this.connect();
    const stop = new AbortController();
    const onSignal = (name: string) => () => {
      log.info("signal received; shutting down", { signal: name });
      stop.abort();
    };
    const handlers: [Deno.Signal, () => void][] = [
      ["SIGTERM", onSignal("SIGTERM")],
      ["SIGINT", onSignal("SIGINT")],
    ];
    for (const [sig, fn] of handlers) Deno.addSignalListener(sig, fn);
    signal?.addEventListener("abort", () => stop.abort(), { once: true });
    // A stray rejection in some callback must not end the process (Deno's default is to exit).
    const onRejection = (e: PromiseRejectionEvent) => {
      e.preventDefault();
      log.error("unhandled rejection", { error: String(e.reason?.stack ?? e.reason) });
    };
    globalThis.addEventListener("unhandledrejection", onRejection);

    registerProcessMetrics(this.registry);
    const server = startHealthServer({
      port: this.#opts.healthPort,
      hostname: this.#opts.bindAddress,
      // Not ready while requests cannot be authenticated (an exec plugin fails or hangs).
      isReady: () => this.#synced && client.credentialsProblem === undefined,
      metrics: this.registry,
      onError: (e) => log.error("health server failed", { error: String(e) }),
    });
    log.info("serving /healthz, /readyz and /metrics", {
      address: `${server.hostname}:${server.port}`,
    });

    const elector = this.#opts.leaderElect ? this.#elector(client) : undefined;
    let code = 0;
    const running: RunningServer[] = [];
    try {
      for (const { name, start } of this.#servers) {
        try {
          running.push(await start(client));
        } catch (e) {
          log.error("a server did not start", { server: name, error: String(e) });
          return (code = 1);
        }
      }
      for (const { watcher } of this.#watchers.values()) watcher.start();
      code = await this.#waitForCaches(stop.signal);
      if (code !== 0 || stop.signal.aborted) return code;
      this.#synced = true;
      log.info("caches synced", { kinds: this.#allWatchers().map((w) => w.resource) });
      const notServed = this.#notServed();
      if (notServed.length) {
        log.warn("serving without namespaces that refuse us; retrying them", { notServed });
      }

      if (elector && !(await elector.acquire(stop.signal))) return 0;
      await Promise.all(this.#controllers.map((c) => c.start()));
      this.pacing.start();
      if (elector) {
        const result = await elector.hold(stop.signal);
        if (result === "lost") code = 1;
      } else {
        await new Promise<void>((resolve) => {
          if (stop.signal.aborted) resolve();
          stop.signal.addEventListener("abort", () => resolve(), { once: true });
        });
      }
      return code;
    } finally {
      await this.#shutdown(elector);
      await Promise.all(running.map((r) => r.shutdown()));
      await server.shutdown();
      for (const [sig, fn] of handlers) Deno.removeSignalListener(sig, fn);
      globalThis.removeEventListener("unhandledrejection", onRejection);
      client.close();
      log.info("stopped", { exitCode: code });
    }
  }

  /** 0 when every cache synced; 1 on a fatal watcher error or the sync timeout. */
  async #waitForCaches(signal: AbortSignal): Promise<number> {
    let timer: TimerId | undefined;
    let onAbort: (() => void) | undefined;
    const all = Promise.all(this.#allWatchers().map((w) => w.synced)).then(() => "ok");
    const timeout = new Promise<string>((resolve) => {
      timer = systemClock.setTimeout(() => resolve("timeout"), this.#opts.cacheSyncTimeoutMs);
    });
    const stopped = new Promise<string>((resolve) => {
      onAbort = () => resolve("stopped");
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const outcome = await Promise.race([all, timeout, stopped]);
      if (outcome === "timeout") {
        const pending = this.#allWatchers().filter((w) => !w.store.hasSynced);
        this.log.error("caches did not sync in time", {
          timeoutMs: this.#opts.cacheSyncTimeoutMs,
          pending: pending.map((w) => w.resource),
        });
        return 1;
      }
      return 0;
    } catch (e) {
      this.log.error("cannot start", { error: e instanceof WatcherError ? e.message : String(e) });
      return 1;
    } finally {
      if (timer !== undefined) systemClock.clearTimeout(timer);
      signal.removeEventListener("abort", onAbort!);
    }
  }

  /** "resource in namespace: reason" of each namespace a watcher is refused in. */
  #notServed(): string[] {
    return this.#allWatchers().flatMap((w) =>
      [...w.notServed].map(([namespace, reason]) => `${w.resource} in ${namespace}: ${reason}`)
    );
  }

  #elector(client: KubeClient): LeaderElector {
    const o = this.#opts;
    const identity = o.leaderElectionIdentity ?? defaultIdentity();
    const namespace = o.leaderElectionNamespace ?? client.namespace ?? "default";
    return new LeaderElector(client, {
      namespace,
      name: o.leaderElectionId,
      identity,
      leaseDurationMs: o.leaseDurationMs,
      renewDeadlineMs: o.renewDeadlineMs,
      retryPeriodMs: o.retryPeriodMs,
      log: this.log.child({ component: "leader-election" }),
      onChange: (leading) => this.#metrics.leader(o.leaderElectionId, leading),
    });
  }

  /** Controllers drain first, then the Lease goes (so no two leaders overlap), then the caches. */
  async #shutdown(elector?: LeaderElector): Promise<void> {
    // Reconciles waiting on a credential plugin fail now rather than at its timeout or the drain's.
    this.#client?.stopCredentialPlugin();
    // The drain's writes go at the full bound: no burst is worth waiting for now.
    this.pacing.stop();
    let timer: TimerId | undefined;
    const drained = Promise.all(this.#controllers.map((c) => c.stop()));
    const timedOut = new Promise<void>((resolve) => {
      timer = systemClock.setTimeout(() => {
        this.log.warn("reconciles still running at the drain deadline; exiting anyway", {
          timeoutMs: DRAIN_TIMEOUT_MS,
        });
        resolve();
      }, DRAIN_TIMEOUT_MS);
    });
    await Promise.race([drained, timedOut]);
    if (timer !== undefined) systemClock.clearTimeout(timer);
    await elector?.release();
    const stopped = Promise.all(this.#allWatchers().map((w) => w.stop())).then(() => true);
    const late = new Promise<boolean>((resolve) => {
      timer = systemClock.setTimeout(() => resolve(false), WATCH_STOP_TIMEOUT_MS);
    });
    if (!(await Promise.race([stopped, late]))) {
      this.log.warn("watches still open at the stop deadline; closing the client", {
        timeoutMs: WATCH_STOP_TIMEOUT_MS,
      });
    }
    if (timer !== undefined) systemClock.clearTimeout(timer);
  }
}

/** hostname plus a random suffix: two processes on one host must not share an identity. */
function defaultIdentity(): string {
  let host = "operator";
  try {
    host = Deno.hostname();
  } catch {
    // no --allow-sys=hostname: the suffix still makes it unique
  }
  return `${host}_${crypto.randomUUID().slice(0, 8)}`;
}

/** Whether two watches of one store ask for the same extra indexes: the same names, functions. */
function sameIndexes(
  a: Record<string, IndexFunc<KubeObject>> = {},
  b: Record<string, IndexFunc<KubeObject>> = {},
): boolean {
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((name) => a[name] === b[name]);
}
