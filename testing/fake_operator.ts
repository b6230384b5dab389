/**
 * The MiniCluster controller on the fake API server (testing/fake_api.ts), for unit-speed tests of
 * reconcile paths: the same wiring as the operator (controller.ts: stores with read-your-writes, the
 * recording client, the reconciler, configured from the operator's flags as mod.ts does), caches
 * that a test refreshes when it wants (`sync`: as if every watch event had arrived; until then they
 * lag behind, as real caches do), a clock the test sets, and one reconcile at a time.
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../api/mod.ts";
import { miniClusterController } from "../controllers/minicluster/controller.ts";
import type { CurveBuilders } from "../controllers/minicluster/kinds/dependents.ts";
import { EventRecorder } from "../controllers/minicluster/status/events.ts";
import type { PodSecurityLevel } from "../controllers/minicluster/policy/pod_security.ts";
import type { InlineCurveCertPolicy } from "../controllers/minicluster/policy/curve_source.ts";
import type { FluxViewMount } from "../controllers/minicluster/workspace/flux_view_choice.ts";
import type { FluxQueueSource } from "../controllers/minicluster/fluxqueue/poller.ts";
import { WATCHED } from "../controllers/minicluster/kinds/child_kinds.ts";
import type { MiniClusterStores } from "../controllers/minicluster/kinds/child_kinds.ts";
import type { Action } from "../runtime/controller/controller.ts";
import { Events, Jobs, Pods, resourceName } from "../runtime/client/resources.ts";
import { MiniClusters } from "../api/resource.ts";
import { Cache, type KubeObject } from "../runtime/cache/store.ts";
import { silentLog } from "../runtime/core/log.ts";
import { Registry } from "../runtime/metrics/metrics.ts";
import { runtimeSwitches } from "../runtime/pacing/pacing.ts";
import { controllerSettings, parseOptions } from "../controllers/minicluster/operator_flags.ts";
import { FakeApiClient, type FakeRequest, selects } from "./fake_api.ts";
import { sampleMiniCluster } from "./sample_minicluster.ts";

export const NS = "ns";

export class FakeOperator {
  readonly api = new FakeApiClient();
  readonly caches: Record<keyof MiniClusterStores, Cache<KubeObject>>;
  readonly definition: ReturnType<typeof miniClusterController>;
  /** What the reconciler puts on /metrics (its stages'). */
  readonly registry = new Registry();
  /** The time the reconciler sees; tests move it. */
  time = Date.parse("2026-11-22T10:00:00Z");
  #seen = 0;

  constructor(
    opts: {
      curve?: CurveBuilders;
      cleanupTimeoutMs?: number;
      podSecurity?: PodSecurityLevel;
      inlineCurveCert?: InlineCurveCertPolicy;
      /** What viewFrom: Auto means (flux_view_choice.ts); default auto. */
      fluxViewMount?: FluxViewMount;
      /** Pacing mechanisms switched off, as `--pacing-off` does (docs/write-pacing.md). */
      pacingOff?: string[];
      /** The operator's command line (operator_flags.ts), as far as the controller reads it. */
      flags?: string[];
      /** What the reconciler knows of Flux's queues (fluxqueue/poller.ts); none by default. */
      fluxQueue?: FluxQueueSource;
    } = {},
  ) {
    this.api.now = () => new Date(this.time);
    const flags = parseOptions([
      ...opts.flags ?? [],
      ...opts.pacingOff ? [`--pacing-off=${opts.pacingOff.join(",")}`] : [],
    ]);
    const settings = controllerSettings(flags);
    // As the manager hands them out (Manager.controllerPacing), without its /metrics.
    const switches = runtimeSwitches(flags.pacingOff);
    const caches: Partial<Record<keyof MiniClusterStores, Cache<KubeObject>>> = {};
    for (const { key, rt, indexes } of WATCHED) {
      caches[key] = new Cache(resourceName(rt), indexes ?? {}, {
        quietUnchanged: true,
      });
    }
    this.caches = caches as Record<keyof MiniClusterStores, Cache<KubeObject>>;
    this.definition = miniClusterController(
      this.api,
      this.caches as unknown as MiniClusterStores,
      {
        ...settings,
        freshnessFence: { on: switches.freshnessFence },
        ownWrites: { on: switches.ownWrites },
        recorder: new EventRecorder(this.api, { instance: "unit-test" }),
        now: () => new Date(this.time),
        curve: opts.curve,
        cleanupTimeoutMs: opts.cleanupTimeoutMs,
        podSecurity: opts.podSecurity ?? settings.podSecurity,
        inlineCurveCert: opts.inlineCurveCert ?? settings.inlineCurveCert,
        fluxViewMount: opts.fluxViewMount ?? settings.fluxViewMount,
        cleanupPollMs: 2_000,
        metrics: this.registry,
        fluxQueue: opts.fluxQueue,
      },
    );
  }

  /** Every cache shows what the API server holds now (transformed as the operator's are). */
  sync(): void {
    for (const { key, rt, labelSelector, fieldSelector, transform } of WATCHED) {
      const items = this.api.objects<KubeObject>(rt).filter((o) =>
        selects(o, { labelSelector, fieldSelector })
      );
      this.caches[key].replace(transform ? items.map(transform) : items, { synced: true });
    }
  }

  /** Creates a MiniCluster (the sample one, `spec` merged in) and syncs the caches. */
  async create(name: string, spec: Partial<MiniCluster["spec"]> = {}): Promise<MiniCluster> {
    const mc = await this.api.create(MiniClusters, sampleMiniCluster(name, NS, spec));
    this.sync();
    return mc;
  }

  /** One reconcile of the MiniCluster `name` as the controller would run it (`retries`: failures before). */
  async reconcile(name: string, retries = 0): Promise<Action> {
    const key = `${NS}/${name}`;
    const ctx = {
      key,
      namespace: NS,
      name,
      retries,
      signal: new AbortController().signal,
      log: silentLog,
    };
    const mc = this.definition.primary.getByKey(key);
    if (!mc) {
      await this.definition.reconciler.deleted(key);
      return {};
    }
    return await this.definition.reconciler.reconcile(mc, ctx);
  }

  /** Reconciles and syncs until a reconcile writes nothing (at most `rounds` times). */
  async converge(name: string, rounds = 5): Promise<Action> {
    let action: Action = {};
    for (let i = 0; i < rounds; i++) {
      const before = this.api.writes().length;
      action = await this.reconcile(name);
      this.sync();
      if (this.api.writes().length === before) return action;
      this.time += action.requeueAfter ?? 0;
    }
    throw new Error(`${name} did not converge in ${rounds} reconciles`);
  }

  /** The requests made since the last call (or since the start). */
  requestsSince(): FakeRequest[] {
    const out = this.api.requests.slice(this.#seen);
    this.#seen = this.api.requests.length;
    return out;
  }

  /** `verb resource` of each write since the last `requestsSince`/`writesSince` call. */
  writesSince(): string[] {
    return this.requestsSince().filter((r) => r.verb !== "get" && r.verb !== "list").map((r) =>
      `${r.verb} ${r.resource}${r.name ? ` ${r.name}` : ""}`
    );
  }

  /**
   * Makes the MiniCluster cache show `name` at `generation` with the size of then (a lagging
   * watch), while the API holds the live object.
   */
  showStale(name: string, generation: number, size: number): void {
    const live = this.miniCluster(name)!;
    const stale: MiniCluster = {
      ...live,
      metadata: { ...live.metadata, generation },
      spec: { ...live.spec, size },
    };
    this.caches.miniClusters.apply("MODIFIED", stale);
  }

  miniCluster(name: string): MiniCluster | undefined {
    return this.api.peek<MiniCluster>(MiniClusters, NS, name);
  }

  condition(name: string, type: string) {
    return this.miniCluster(name)?.status?.conditions?.find((c) => c.type === type);
  }

  /** Reasons of the Events written about `name`, in order. */
  events(name: string): string[] {
    return this.api.objects<{ involvedObject?: { name?: string }; reason?: string }>(Events)
      .filter((e) => e.involvedObject?.name === name).map((e) => e.reason ?? "");
  }

  /** Seeds `n` pods of the MiniCluster's Job as the Job controller and kubelet would make them. */
  seedPods(name: string, n: number, ready: number): void {
    const job = this.api.peek<KubeObject>(Jobs, NS, name);
    for (let i = 0; i < n; i++) {
      const pod: Pod = {
        metadata: {
          name: `${name}-${i}-x`,
          namespace: NS,
          labels: {
            "job-name": name,
            "flux-framework.org/minicluster": name,
            "app.kubernetes.io/managed-by": "minicluster-operator",
            "batch.kubernetes.io/job-completion-index": String(i),
          },
          ownerReferences: [{
            apiVersion: "batch/v1",
            kind: "Job",
            name,
            uid: job?.metadata?.uid ?? "",
            controller: true,
          }],
        },
        spec: { containers: [{ name: "c", image: "i" }] },
        status: {
          phase: "Running",
          podIP: `10.0.0.${10 + i}`,
          conditions: [{ type: "Ready", status: i < ready ? "True" : "False" }],
        },
      };
      this.api.seed(Pods, pod);
    }
    this.sync();
  }
}
