/**
 * The MiniCluster reconciler: `reconcile(mc, ctx) → Action`, level-triggered and idempotent.
 *
 *   finalizer → validate → sizes → build → police → dependents → queue → finish
 *
 * After the finalizer the reconcile is data: a list of named stages (pipeline.ts) over one record
 * that starts as the MiniCluster, its freshness fence and the reconcile's context, to which each
 * stage adds its fields, or stops (stage.ts) with the status report to write and when to look
 * again. One loop runs the list and logs, times and counts each stage (stage_metrics.ts). Each
 * stage's body is `<stage>_stage.ts`, beside its domain; finish, here, ends every path:
 *
 * | stage      | reads / writes                                      | adds to the record         |
 * | ---------- | --------------------------------------------------- | -------------------------- |
 * | validate   | nothing (api/ defaulting and checks)                | spec (defaulted)           |
 * | sizes      | the workspace, from the cache or the API; no write  | sizes                      |
 * | build      | a referenced CURVE Secret, the gang dry run, Kueue's | desired, running, gang,   |
 * |            | Workload of a Job being suspended or resumed         | queueing                  |
 * | police     | nothing (--pod-security, pod_security.ts)           | nothing                    |
 * | dependents | every child in waves (the gang's PodGroup before    | report, requeueAfterMs     |
 * |            | the Job), then pruning (dependents.ts)              |                            |
 * | queue      | the Workload follows spec.suspend, behind the fence | report (with the queue)    |
 * | finish     | the status and its Events, or the self-deletion of  | (the Action)               |
 * |            | a finished MiniCluster, behind the fence            |                            |
 *
 * | stage      | stops with                                                                       |
 * | ---------- | -------------------------------------------------------------------------------- |
 * | validate   | ValidationFailed                                                                 |
 * | sizes      | WorkspaceInvalid/Lost                                                            |
 * | build      | CURVE problems, BuildFailed                                                      |
 * | police     | PodSecurity                                                                      |
 * | dependents | a transient error (after its report from the first retry); a workspace that      |
 * |            | refuses the sizes; other sizes: build again                                      |
 * | queue      | never                                                                            |
 *
 * Every run recomputes the whole desired state from the spec and the workspace's sizes, lets each
 * dependent compare itself with the cache and write only what differs, then derives the status from
 * what it observed and writes it only when it changed and is due: the status writer's plan is data
 * (the status, or which pacing rule holds it back and until when), so the requeue of a paced status
 * is the Action finish returns. An unchanged MiniCluster therefore costs zero requests.
 *
 * Nothing is written before police: a spec that cannot be built leaves no child, not even its
 * workspace. Problems that retrying cannot fix (an invalid spec, a Job field a running Job cannot
 * take, an API rejection, a name someone else holds) become conditions and Events and the reconcile
 * ends normally: it runs again when something changes. Only transient failures (throttling, server
 * errors, conflicts) are thrown, so the controller retries them with backoff. Every write of a
 * reconcile, the status, its Events and the self-deletion included, goes through the freshness
 * fence (one read of the live MiniCluster before the first write): a view older than the live one
 * writes nothing and ends the reconcile to wait for the cache. The self-deletion also carries the
 * view's resourceVersion as a precondition, for a change made after the fence's read.
 */
import type { DefaultedMiniCluster, MiniCluster } from "../../api/mod.ts";
import type { ApiClient } from "../../runtime/client/api_client.ts";
import {
  Action,
  type ReconcileContext,
  type Reconciler,
} from "../../runtime/controller/controller.ts";
import { deleteUnchanged, DependentResources } from "../../runtime/controller/dependents.ts";
import { errorMessage } from "../../runtime/client/errors.ts";
import { Finalizer } from "../../runtime/controller/finalizer.ts";
import {
  type FenceSwitch,
  type FreshnessFence,
  StaleViewError,
} from "../../runtime/controller/freshness_fence.ts";
import { MiniClusters } from "../../api/resource.ts";
import type { RuntimeLog } from "../../runtime/core/log.ts";
import { Registry } from "../../runtime/metrics/metrics.ts";
import { FIELD_MANAGER, FINALIZER } from "./children/names.ts";
import type { InlineCurveCertPolicy } from "./policy/curve_source.ts";
import { Cleanup } from "./lifecycle/cleanup.ts";
import { type CurveBuilders, defaultCurve } from "./kinds/dependents.ts";
import type { EventRecorder } from "./status/events.ts";
import { afterFinish, type Deletion } from "./lifecycle/finished.ts";
import type { PodSecurityLevel } from "./policy/pod_security.ts";
import { HeldSuspensions } from "./lifecycle/held_suspensions.ts";
import { RecreateBudget } from "./kinds/services_pod_drift.ts";
import { type StatusReport, StatusWriter } from "./status/status_writer.ts";
import { type Stage, type Stop, stop } from "./pipeline/stage.ts";
import type { MiniClusterStores } from "./kinds/child_kinds.ts";
import { GangSupportProbe } from "./gang/gang_support.ts";
import { type StatusTiming, TIMING } from "./timing.ts";
import { WorkspaceResolver } from "./workspace/workspace.ts";
import {
  FluxViewChooser,
  type FluxViewMount,
  type NodeRuntimeSource,
} from "./workspace/flux_view_choice.ts";
import { NodeRuntimes } from "./workspace/node_runtimes.ts";
import { measured, Pipeline, type StageWatch } from "./pipeline/pipeline.ts";
import { StageMetrics } from "./pipeline/stage_metrics.ts";
import { validateStage } from "./pipeline/validate_stage.ts";
import { sizesStage } from "./workspace/sizes_stage.ts";
import { buildStage } from "./pipeline/build_stage.ts";
import { policeStage } from "./policy/police_stage.ts";
import { type Applied, dependentsStage } from "./pipeline/dependents_stage.ts";
import { queueStage } from "./lifecycle/queue_stage.ts";
import type { FluxQueueSource } from "./fluxqueue/poller.ts";
import { fluxQueueWant } from "./fluxqueue/lead.ts";
import { DesiredMemo, startingJob } from "./kinds/desired_memo.ts";
import { ownJob, podsOf } from "./kinds/stores.ts";

export type { MiniClusterStores } from "./kinds/child_kinds.ts";

export interface MiniClusterReconcilerOptions {
  /** The client writes go through (with read-your-writes, see controller.ts). */
  client: ApiClient;
  /** The caches (with this process's recent writes folded in). */
  stores: MiniClusterStores;
  recorder: EventRecorder;
  /** How long deletion waits for the MiniCluster's pods to go before giving up. */
  cleanupTimeoutMs?: number;
  /** How often deletion checks again while pods remain. */
  cleanupPollMs?: number;
  /** How the CURVE certificate is made (tests may count calls). */
  curve?: CurveBuilders;
  /** The Pod Security Standard the pods must meet (pod_security.ts); default privileged. */
  podSecurity?: PodSecurityLevel;
  /** Whether `flux.curveCert` is accepted (curve_source.ts); default allow. */
  inlineCurveCert?: InlineCurveCertPolicy;
  /** What `viewFrom: Auto` means (flux_view_choice.ts); default auto. */
  fluxViewMount?: FluxViewMount;
  /**
   * The nodes' runtimes for `auto` (default: listed through `client`, node_runtimes.ts); null: not
   * read (an operator confined to namespaces has no right to list Nodes), `auto` copies.
   */
  nodeRuntimes?: NodeRuntimeSource | null;
  /** Where the stages' and the first status's metrics are registered (the manager's, /metrics). */
  metrics?: Registry;
  /** The freshness fence's switch (`--pacing-off=freshness-fence`); on by default. */
  freshnessFence?: FenceSwitch;
  /** When a changed status is written (timing.ts); `STATUS_TIMING` by default. */
  statusTiming?: StatusTiming;
  /**
   * Reads the lead brokers' queue reporters for the MiniClusters that ask (fluxqueue/poller.ts);
   * without it, no queue is reported.
   */
  fluxQueue?: FluxQueueSource;
  now?: () => Date;
}

/** Retry soon after finding the cached MiniCluster behind the live one (the watch catches up). */
const STALE_VIEW_REQUEUE_MS = 1_000;

/** What the pipeline starts from: the object, the fence its writes pass, the reconcile. */
interface Start {
  readonly mc: MiniCluster;
  readonly fence: FreshnessFence;
  readonly ctx: ReconcileContext;
}

export class MiniClusterReconciler implements Reconciler<MiniCluster> {
  readonly #stores: MiniClusterStores;
  readonly #recorder: EventRecorder;
  readonly #finalizer: Finalizer<MiniCluster>;
  readonly #status: StatusWriter;
  readonly #cleanup: Cleanup;
  readonly #held = new HeldSuspensions();
  readonly #now: () => Date;
  readonly #client: ApiClient;
  readonly #stageMetrics: StageMetrics;
  readonly #fluxQueue?: FluxQueueSource;
  readonly #memo: DesiredMemo;
  readonly #pipeline;

  constructor(opts: MiniClusterReconcilerOptions) {
    const { client, stores, recorder } = opts;
    const now = opts.now ?? (() => new Date());
    this.#client = client;
    this.#now = now;
    this.#stores = stores;
    this.#recorder = recorder;
    this.#fluxQueue = opts.fluxQueue;
    this.#finalizer = new Finalizer(
      client,
      MiniClusters,
      FINALIZER,
      FIELD_MANAGER,
      opts.freshnessFence,
    );
    this.#status = new StatusWriter(client, stores, recorder, now, {
      timing: opts.statusTiming,
      metrics: opts.metrics,
    });
    this.#cleanup = new Cleanup(client, stores, recorder, now, {
      timeoutMs: opts.cleanupTimeoutMs ?? TIMING.cleanupTimeoutMs,
      pollMs: opts.cleanupPollMs ?? TIMING.cleanupPollMs,
    });
    this.#stageMetrics = new StageMetrics(opts.metrics ?? new Registry());
    this.#memo = new DesiredMemo(opts.metrics);
    const nodes = opts.nodeRuntimes === null
      ? undefined
      : opts.nodeRuntimes ?? new NodeRuntimes(client, () => now().getTime());
    const fluxViews = new FluxViewChooser(opts.fluxViewMount ?? "auto", nodes);
    this.#pipeline = Pipeline.over<Start>()
      .then("validate", validateStage)
      .then("sizes", sizesStage(new WorkspaceResolver(client, stores, fluxViews)))
      .then(
        "build",
        buildStage({
          client,
          stores,
          gangSupport: new GangSupportProbe(client, () => now().getTime()),
          inlineCurveCert: opts.inlineCurveCert ?? "allow",
          memo: this.#memo,
        }),
      )
      .then("police", policeStage(opts.podSecurity ?? "privileged"))
      .then(
        "dependents",
        dependentsStage({
          client,
          stores,
          resources: new DependentResources(client, FIELD_MANAGER),
          recorder,
          curve: opts.curve ?? defaultCurve,
          recreates: new RecreateBudget(() => now().getTime()),
          held: this.#held,
        }),
      )
      .then("queue", queueStage(client));
  }

  reconcile(mc: MiniCluster, ctx: ReconcileContext): Promise<Action> {
    // A MiniCluster being deleted is no longer read (fluxQueueWant says so).
    if (mc.metadata?.deletionTimestamp) this.#fluxQueue?.forget(ctx.key);
    return this.#finalizer.run(mc, {
      apply: (live, fence) => this.#apply(live, fence, ctx),
      cleanup: (doomed) => this.#cleanup.run(doomed, ctx.log),
    });
  }

  /** The MiniCluster is gone from the cache: forget what this process remembered of it. */
  deleted(key: string): Promise<void> {
    this.#status.forget(key);
    this.#held.forget(key);
    this.#fluxQueue?.forget(key);
    this.#memo.forget(key);
    return Promise.resolve();
  }

  /** The stages, then finish (each logged, timed, counted); every write of the end passes `fence`. */
  async #apply(mc: MiniCluster, fence: FreshnessFence, ctx: ReconcileContext): Promise<Action> {
    const watch: StageWatch = { log: ctx.log, metrics: this.#stageMetrics };
    try {
      const end = await this.#pipeline.run({ mc, fence, ctx }, watch);
      const action = await measured(
        "finish",
        watch,
        () => this.#finish(mc, end, fence, ctx),
        () => "done",
      );
      // Settled: the next reconcile comes with a change, which builds anew (desired_memo.ts).
      const job = ownJob(this.#stores, mc);
      if (action.requeueAfter === undefined && !startingJob(job, podsOf(this.#stores, mc))) {
        this.#memo.forget(ctx.key);
      }
      return action;
    } catch (e) {
      if (!(e instanceof StaleViewError)) throw e;
      ctx.log.debug("stale view of the MiniCluster; waiting for the cache", { reason: e.message });
      return Action.requeueAfter(STALE_VIEW_REQUEUE_MS);
    }
  }

  /**
   * Finish: a finished MiniCluster whose spec says to go deletes itself (#deleteSelf); otherwise
   * the status the report makes is written when it changed and is due (status_writer.ts), behind
   * the freshness fence, and a transient failure is thrown after its report.
   */
  async #finish(
    mc: MiniCluster,
    end: Stage<Ended>,
    fence: FreshnessFence,
    ctx: ReconcileContext,
  ): Promise<Action> {
    const last = end.stop ? end : this.#ending(end.value);
    if (last.deletion) return await this.#deleteSelf(mc, last.deletion, fence, ctx.log);
    if (last.retry !== undefined) {
      await this.#reportFailing(mc, last.report, fence, ctx);
      throw last.retry;
    }
    const after = last.requeueAfterMs;
    if (!last.report) {
      return after === undefined ? Action.awaitChange() : Action.requeueAfter(after);
    }
    const plan = this.#status.plan(mc, this.#withFluxQueue(mc, last.report, ctx));
    if (plan.paced) ctx.log.debug("status paced", { rule: plan.paced, ...plan.action });
    if (plan.status) await this.#status.write(mc, plan.status, fence);
    return Action.soonest(plan.action, after);
  }

  /**
   * The report with what the poller knows of Flux's queue, when the spec asks for it: the lead pod
   * to read is handed to the poller (no IO; it reads on its own timer and wakes this MiniCluster
   * when what it knows changes), and what it knows now goes into the status.
   */
  #withFluxQueue(mc: MiniCluster, report: StatusReport, ctx: ReconcileContext): StatusReport {
    if (!this.#fluxQueue) return report;
    const want = fluxQueueWant(mc, this.#stores);
    const fluxQueue = this.#fluxQueue.follow(ctx.key, want, ctx.signal);
    return fluxQueue ? { ...report, fluxQueue } : report;
  }

  /** What a run through every stage ends with: the self-deletion, or the full report. */
  #ending(record: Ended): Stop {
    const end = afterFinish(record.spec, this.#stores, this.#now());
    if ("delete" in end) return stop(undefined, undefined, { deletion: end.delete });
    const soonest = [record.requeueAfterMs, end.requeueAfterMs].filter((ms) => ms !== undefined);
    return stop(record.report, soonest.length ? Math.min(...soonest) : undefined);
  }

  /**
   * A write that keeps failing (this is a retry of a reconcile that failed too) is reported now,
   * with the API's message, while the controller goes on retrying with backoff: an object over
   * etcd's size limit fails as a server error, which retrying never fixes. A single failure writes
   * nothing, so that one blip of the API server does not flap the conditions.
   */
  async #reportFailing(
    mc: MiniCluster,
    report: StatusReport | undefined,
    fence: FreshnessFence,
    ctx: ReconcileContext,
  ): Promise<void> {
    if (!report) return;
    try {
      const plan = this.#status.plan(mc, this.#withFluxQueue(mc, report, ctx));
      if (plan.status) await this.#status.write(mc, plan.status, fence);
    } catch (e) {
      ctx.log.debug("could not report the failing write", { error: errorMessage(e) });
    }
  }

  /**
   * The MiniCluster finished and its spec says to go (finished.ts): it deletes itself, behind the
   * fence and only as the version this was decided from (the view's resourceVersion as a
   * precondition). A view behind the live object (the TTL raised or cleanup cleared while the
   * watch lags) deletes nothing and decides again from a fresher one.
   */
  async #deleteSelf(
    mc: MiniCluster,
    why: Deletion,
    fence: FreshnessFence,
    log: RuntimeLog,
  ): Promise<Action> {
    await fence.check();
    const outcome = await deleteUnchanged(this.#client, MiniClusters, mc, {
      propagationPolicy: "Background",
    });
    if (outcome === "changed") {
      throw new StaleViewError(`the MiniCluster changed since ${mc.metadata?.resourceVersion}`);
    }
    if (outcome === "deleted") {
      log.info(why.message);
      await this.#recorder.emit(mc, { type: "Normal", reason: why.reason, message: why.message });
    }
    return Action.awaitChange();
  }
}

/** What finish reads of a run through every stage: the defaulted spec and the report so far. */
type Ended = { readonly spec: DefaultedMiniCluster } & Applied;
