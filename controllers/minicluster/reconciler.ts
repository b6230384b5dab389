/**
 * The MiniCluster reconciler: `reconcile(mc, ctx) → Action`, level-triggered and idempotent.
 *
 *   finalizer → validate → sizes → build → police → dependents → queue → finish
 *
 * Each stage returns one type (stage.ts): Continue with a value for the next stage, or Stop with the
 * status report to write and when to look again. Finish is the one end of every path:
 *
 * | stage      | reads / writes                                      | stops with                      |
 * | ---------- | --------------------------------------------------- | ------------------------------- |
 * | validate   | nothing (api/ defaulting and checks)                | ValidationFailed                |
 * | sizes      | the workspace, from the cache or the API; no write  | WorkspaceInvalid/Lost           |
 * | build      | a referenced CURVE Secret, the gang dry run, Kueue's | CURVE problems, BuildFailed     |
 * |            | Workload of a Job being suspended or resumed        |                                 |
 * | police     | nothing (--pod-security, pod_security.ts)           | PodSecurity                     |
 * | dependents | every child in waves (the gang's PodGroup before    | a transient error (after its    |
 * |            | the Job), then pruning (dependents.ts)              | report from the first retry);   |
 * |            |                                                     | a workspace that refuses the    |
 * |            |                                                     | sizes; other sizes: build again |
 * | queue      | the Workload follows spec.suspend, behind the fence | never                           |
 * | finish     | the status and its Events, or the self-deletion of  | (the Action)                    |
 * |            | a finished MiniCluster, behind the fence            |                                 |
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
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import {
  type DefaultedMiniCluster,
  type MiniCluster,
  specSizes,
  validateSpec,
  withDefaults,
} from "../../api/mod.ts";
import type { ApiClient } from "../../runtime/api_client.ts";
import { Action, type ReconcileContext, type Reconciler } from "../../runtime/controller.ts";
import {
  created,
  deleteUnchanged,
  type Dependent,
  DependentResources,
  type DependentsOutcome,
  type Problem,
} from "../../runtime/dependents.ts";
import { errorMessage } from "../../runtime/errors.ts";
import { Finalizer } from "../../runtime/finalizer.ts";
import { type FreshnessFence, StaleViewError } from "../../runtime/freshness_fence.ts";
import { Jobs } from "../../runtime/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import type { RuntimeLog } from "../../runtime/log.ts";
import { curveSecretName, FIELD_MANAGER, FINALIZER, podGroupName } from "./children/names.ts";
import { curveProblems } from "./curve_integrity.ts";
import { curveSource, type InlineCurveCertPolicy } from "./curve_source.ts";
import { Cleanup } from "./cleanup.ts";
import { type CurveBuilders, defaultCurve, miniClusterDependents } from "./dependents.ts";
import { BuildError, desiredChildren, type DesiredOptions } from "./desired.ts";
import type { EventRecorder } from "./events.ts";
import { afterFinish, type Deletion } from "./finished.ts";
import { type PodSecurityLevel, policed } from "./pod_security.ts";
import { joinedMessages } from "./messages.ts";
import { HeldSuspensions } from "./held_suspensions.ts";
import { RecreateBudget } from "./services_pod_drift.ts";
import { type StatusReport, StatusWriter } from "./status_writer.ts";
import { proceed, type Stage, type Stop, stop } from "./stage.ts";
import type { DesiredChildren, MiniClusterStores } from "./child_kinds.ts";
import { ownJob } from "./stores.ts";
import { jobPodGroup, type PodGroup } from "./children/gang.ts";
import type { GangReport } from "./gang_condition.ts";
import { GangSupportProbe } from "./gang_support.ts";
import { PodGroups, podGroupState } from "./pod_group.ts";
import { TIMING } from "./timing.ts";
import { jobQueueLabel, queueLabelChange } from "./children/queue.ts";
import {
  followSuspend,
  type QueueReport,
  queueReport,
  readQueueWorkload,
  type WorkloadRead,
} from "./queue_workload.ts";
import { type Sizes, unusable, WorkspaceResolver } from "./workspace.ts";
import type { MiniClusterWorkspace } from "../../api/workspace.ts";

export type { MiniClusterStores } from "./child_kinds.ts";

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
  now?: () => Date;
}

/** Retry soon after finding the cached MiniCluster behind the live one (the watch catches up). */
const STALE_VIEW_REQUEUE_MS = 1_000;

export class MiniClusterReconciler implements Reconciler<MiniCluster> {
  readonly #client: ApiClient;
  readonly #stores: MiniClusterStores;
  readonly #recorder: EventRecorder;
  readonly #curve: CurveBuilders;
  readonly #finalizer: Finalizer<MiniCluster>;
  readonly #resources: DependentResources;
  readonly #workspace: WorkspaceResolver;
  readonly #status: StatusWriter;
  readonly #cleanup: Cleanup;
  readonly #recreates: RecreateBudget;
  readonly #held = new HeldSuspensions();
  readonly #gangSupport: GangSupportProbe;
  readonly #now: () => Date;
  readonly #podSecurity: PodSecurityLevel;
  readonly #inlineCurveCert: InlineCurveCertPolicy;

  constructor(opts: MiniClusterReconcilerOptions) {
    const { client, stores, recorder } = opts;
    const now = opts.now ?? (() => new Date());
    this.#client = client;
    this.#now = now;
    this.#stores = stores;
    this.#recorder = recorder;
    this.#curve = opts.curve ?? defaultCurve;
    this.#podSecurity = opts.podSecurity ?? "privileged";
    this.#inlineCurveCert = opts.inlineCurveCert ?? "allow";
    this.#finalizer = new Finalizer(client, MiniClusters, FINALIZER, FIELD_MANAGER);
    this.#resources = new DependentResources(client, FIELD_MANAGER);
    this.#gangSupport = new GangSupportProbe(client, () => now().getTime());
    this.#workspace = new WorkspaceResolver(client, stores);
    this.#status = new StatusWriter(client, stores, recorder, now);
    this.#recreates = new RecreateBudget(() => now().getTime());
    this.#cleanup = new Cleanup(client, stores, recorder, now, {
      timeoutMs: opts.cleanupTimeoutMs ?? TIMING.cleanupTimeoutMs,
      pollMs: opts.cleanupPollMs ?? TIMING.cleanupPollMs,
    });
  }

  reconcile(mc: MiniCluster, ctx: ReconcileContext): Promise<Action> {
    return this.#finalizer.run(mc, {
      apply: (live, fence) => this.#apply(live, fence, ctx),
      cleanup: (doomed) => this.#cleanup.run(doomed, ctx.log),
    });
  }

  /** The MiniCluster is gone from the cache: forget what this process remembered of it. */
  deleted(key: string): Promise<void> {
    this.#status.forget(key);
    this.#held.forget(key);
    return Promise.resolve();
  }

  /** The stages, then finish: every write of the end goes through `fence`. */
  async #apply(mc: MiniCluster, fence: FreshnessFence, ctx: ReconcileContext): Promise<Action> {
    try {
      return await this.#finish(mc, await this.#pipeline(mc, fence, ctx), fence, ctx);
    } catch (e) {
      if (!(e instanceof StaleViewError)) throw e;
      ctx.log.debug("stale view of the MiniCluster; waiting for the cache", { reason: e.message });
      return Action.requeueAfter(STALE_VIEW_REQUEUE_MS);
    }
  }

  /** validate → sizes → build → police → dependents → queue, each may stop the rest. */
  async #pipeline(
    mc: MiniCluster,
    fence: FreshnessFence,
    ctx: ReconcileContext,
  ): Promise<Stage<Applied>> {
    const spec = validate(mc);
    if (spec.stop) return spec;
    const sizes = await this.#sizes(spec.value);
    if (sizes.stop) return sizes;
    const desired = await this.#build(spec.value, sizes.value);
    if (desired.stop) return desired;
    const pods = police(desired.value, sizes.value, this.#podSecurity);
    if (pods.stop) return pods;
    const applied = await this.#dependents(mc, spec.value, sizes.value, pods.value, fence, ctx);
    if (applied.stop) return applied;
    return await this.#queue(spec.value, applied.value, fence);
  }

  /**
   * Sizes: the workspace's (workspace.ts), read from the cache or, when it is not there, from the
   * API server; no write.
   */
  async #sizes(spec: DefaultedMiniCluster): Promise<Stage<Sizes>> {
    const sizes = await this.#workspace.sizes(spec);
    if ("problem" in sizes) {
      const requestedSize = spec.spec.size;
      return stop({ requestedSize, unappliable: sizes.problem }, sizes.requeueAfterMs);
    }
    return proceed(sizes);
  }

  /**
   * Build: the CURVE certificate's source (a referenced Secret is read) and the desired children,
   * beside a running Job in its subdomain; a gang the API server does not serve is built again
   * unganged (gang_condition.ts). Only reads and a dry run.
   */
  async #build(spec: DefaultedMiniCluster, sizes: Sizes): Promise<Stage<Built>> {
    const curve = await curveSource(this.#client, spec, this.#inlineCurveCert);
    if ("invalid" in curve) return stop({ ...sized(sizes), invalid: curve.invalid });
    if ("problem" in curve) {
      return stop({ ...sized(sizes), unappliable: curve.problem }, curve.recheckMs);
    }
    const given = "text" in curve ? curve : undefined;
    // What the running brokers depend on follows their Job's subdomain, not the spec's.
    const running = ownJob(this.#stores, spec);
    const runningSubdomain = running?.spec?.template?.spec?.subdomain;
    const queueing = await this.#queueing(spec, running);
    const suspend = spec.spec.suspend === true && !queueing.read?.workload;
    const opts = { given, runningSubdomain, suspend, queue: queueing.label };
    const first = await built(spec, sizes, opts);
    if (first.stop) return first;
    const gang: GangReport = { asked: spec.spec.gang !== undefined };
    if (!gang.asked || jobPodGroup(running) !== undefined) {
      return proceed({ desired: first.value, running, gang, queueing });
    }
    const support = await this.#gangSupport.check(first.value.job);
    if (support.served) return proceed({ desired: first.value, running, gang, queueing });
    gang.unavailable = support.why;
    const unganged = await built(spec, sizes, { ...opts, unganged: true });
    if (unganged.stop) return unganged;
    return proceed({ desired: unganged.value, running, gang, queueing });
  }

  /**
   * How the Job is queued (children/queue.ts): its queue label (the live Job's once it exists), and,
   * while the Job is suspended or the spec suspends it, Kueue's Workload of it, which decides
   * whether spec.suspend goes through the Workload or on the Job (queue_workload.ts). Only reads.
   */
  async #queueing(spec: DefaultedMiniCluster, running: Job | undefined): Promise<Queueing> {
    const label = jobQueueLabel(spec, running);
    const change = queueLabelChange(spec, running);
    const base = { label, ...(change ? { change } : {}) };
    if (!running || (spec.spec.suspend !== true && running.spec?.suspend !== true)) return base;
    return { ...base, read: await readQueueWorkload(this.#client, running) };
  }

  /**
   * Dependents: every child in its wave, then pruning (dependents.ts). A transient failure stops
   * with the error for the backoff, reported only when it keeps failing (#failing); a workspace that
   * does not confirm the sizes stops before the Job.
   */
  async #dependents(
    mc: MiniCluster,
    spec: DefaultedMiniCluster,
    sizes: Sizes,
    built: Built,
    fence: FreshnessFence,
    ctx: ReconcileContext,
  ): Promise<Stage<Applied>> {
    const plan = miniClusterDependents(spec, built.desired, sizes, this.#stores, {
      curve: this.#curve,
      recorder: this.#recorder,
      recreates: this.#recreates,
      client: this.#client,
      held: this.#held,
    });
    const outcome = await this.#resources.reconcile(mc, plan, fence);
    if (outcome.retry !== undefined) {
      const report = failing(ctx)
        ? { ...sized(sizes), unappliable: summary(outcome.problems) }
        : undefined;
      return stop(report, undefined, { retry: outcome.retry });
    }
    const workspace = outcome.results.get(plan.workspace as Dependent);
    if (outcome.stopped) {
      const refused = workspace?.taken ?? workspace?.object;
      const why = refused ? unusable(spec, refused as MiniClusterWorkspace) : undefined;
      if (why) return stop({ ...sized(sizes), unappliable: why.problem }, why.requeueAfterMs);
      if (workspace?.problem) {
        return stop({ ...sized(sizes), unappliable: workspace.problem }, workspace.requeueAfterMs);
      }
      // The workspace holds other sizes than the unconfirmed ones: build again from it.
      return stop(undefined, 0);
    }
    if (workspace?.created && sizes.unconfirmed?.from === "entrypoint") {
      await this.#recorder.emit(mc, {
        type: "Warning",
        reason: "WorkspaceRecovered",
        message: `the MiniClusterWorkspace ${plan.workspace.name} was missing; made again from ` +
          `the running brokers' hostlist (maxSize ${sizes.maximumSize}), not from the spec`,
      });
    }
    const problems = [
      ...outcome.problems,
      ...(built.queueing.change ? [built.queueing.change] : []),
      ...this.#curveProblems(mc, built.desired),
    ];
    return proceed({
      spec,
      report: {
        ...sized(sizes),
        unappliable: summary(problems),
        jobCreated: created(outcome, Jobs),
        gang: this.#gangReport(spec, built, outcome),
      },
      requeueAfterMs: outcome.requeueAfterMs,
      queueing: built.queueing,
    });
  }

  /**
   * Finish: a finished MiniCluster whose spec says to go deletes itself (#deleteSelf); otherwise
   * the status the report makes is written when it changed and is due (status_writer.ts), behind
   * the freshness fence, and a transient failure is thrown after its report.
   */
  async #finish(
    mc: MiniCluster,
    end: Stage<Applied>,
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
    const plan = this.#status.plan(mc, last.report);
    if (plan.paced) ctx.log.debug("status paced", { rule: plan.paced, ...plan.action });
    if (plan.status) await this.#status.write(mc, plan.status, fence);
    return Action.soonest(plan.action, after);
  }

  /** What a run through every stage ends with: the self-deletion, or the full report. */
  #ending(applied: Applied): Stop {
    const end = afterFinish(applied.spec, this.#stores, this.#now());
    if ("delete" in end) return stop(undefined, undefined, { deletion: end.delete });
    const soonest = [applied.requeueAfterMs, end.requeueAfterMs].filter((ms) => ms !== undefined);
    return stop(applied.report, soonest.length ? Math.min(...soonest) : undefined);
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
      const plan = this.#status.plan(mc, report);
      if (plan.status) await this.#status.write(mc, plan.status, fence);
    } catch (e) {
      ctx.log.debug("could not report the failing write", { error: errorMessage(e) });
    }
  }

  /**
   * The gang as the dependents left it: the PodGroup the pods name (or would name) as this
   * reconcile wrote it, else as the cache shows it (a ganged Job whose spec dropped the gang).
   */
  #gangReport(mc: DefaultedMiniCluster, built: Built, outcome: DependentsOutcome): GangReport {
    const name = jobPodGroup(built.running) ?? podGroupName(mc);
    const written = [...outcome.results].find(([d]) => d.resource === PodGroups)?.[1]
      .object as PodGroup | undefined;
    const group = written ?? this.#stores.podGroups.get(mc.metadata?.namespace, name);
    const podGroup = podGroupState(group, mc.metadata?.uid);
    return { ...built.gang, ...(podGroup ? { podGroup } : {}) };
  }

  /**
   * Queue: the Workload of a Job Kueue tracks follows spec.suspend (queue_workload.ts); the
   * report says how the Job is queued, and why a labelled Job Kueue does not track is suspended
   * by the operator itself.
   */
  async #queue(
    mc: DefaultedMiniCluster,
    applied: Applied,
    fence: FreshnessFence,
  ): Promise<Stage<Applied>> {
    const { label, read } = applied.queueing;
    const reported = (report: QueueReport) =>
      proceed({ ...applied, report: { ...applied.report, queue: report } });
    const workload = read?.workload;
    if (workload) {
      const queue = label ?? workload.spec?.queueName ?? "";
      const suspend = mc.spec.suspend === true;
      return reported(
        queueReport(queue, await followSuspend(this.#client, workload, suspend, fence)),
      );
    }
    if (!label) return proceed(applied);
    if (!read || mc.spec.suspend !== true) return reported({ queue: label });
    return reported({ queue: label, untracked: read.served ? "none" : "unserved" });
  }

  /** What happened to the generated CURVE certificate behind the operator's back. */
  #curveProblems(mc: MiniCluster, desired: DesiredChildren): Problem[] {
    if (desired.curveSecret) return []; // the user's certificate is applied when it differs
    const ns = mc.metadata?.namespace;
    return curveProblems(
      this.#stores.secrets.get(ns, curveSecretName(mc)),
      ownJob(this.#stores, mc),
    );
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

/**
 * The built children, the running Job they were built beside, the gang as far as known, and how
 * the Job is queued.
 */
interface Built {
  desired: DesiredChildren;
  running: Job | undefined;
  gang: GangReport;
  queueing: Queueing;
}

/** How the Job is queued (#queueing). */
interface Queueing {
  /** Kueue's queue label the Job carries (or is created with); null: none. */
  label: string | null;
  /** The spec's queue label the live Job cannot take. */
  change?: Problem;
  /** Kueue's Workload of the Job, read while the Job is suspended or the spec suspends it. */
  read?: WorkloadRead;
}

/** What the dependents left: the status report so far and the soonest requeue they asked for. */
interface Applied {
  spec: DefaultedMiniCluster;
  report: StatusReport;
  requeueAfterMs?: number;
  queueing: Queueing;
}

/** The report's sizes (what the status shows of them). */
function sized(
  sizes: Sizes,
): Pick<StatusReport, "requestedSize" | "effectiveSize" | "maximumSize"> {
  const { requestedSize, effectiveSize, maximumSize } = sizes;
  return { requestedSize, effectiveSize, maximumSize };
}

/** This reconcile retries one that failed: a failing write is reported now (#reportFailing). */
function failing(ctx: ReconcileContext): boolean {
  return ctx.retries >= 1;
}

/** Validate: the defaulted MiniCluster, or why its spec cannot be used; no IO. */
function validate(mc: MiniCluster): Stage<DefaultedMiniCluster> {
  const requestedSize = specSizes(mc.spec).size;
  const invalid = (message: string) =>
    stop({ requestedSize, invalid: { reason: "ValidationFailed", message } });
  try {
    const problems = validateSpec(mc);
    if (problems.length === 0) return proceed(withDefaults(mc));
    return invalid(joinedMessages(problems));
  } catch (e) {
    return invalid(errorMessage(e));
  }
}

/**
 * The desired children at `sizes` (beside a running Job in `runningSubdomain`), or why the
 * builders cannot make them.
 */
async function built(
  mc: DefaultedMiniCluster,
  sizes: Sizes,
  opts: DesiredOptions,
): Promise<Stage<DesiredChildren>> {
  try {
    return proceed(await desiredChildren(mc, sizes, opts));
  } catch (e) {
    if (!(e instanceof BuildError)) throw e;
    return stop({ ...sized(sizes), invalid: { reason: "BuildFailed", message: e.message } });
  }
}

/** Police: the built pods against --pod-security (pod_security.ts); no IO. */
function police(built: Built, sizes: Sizes, level: PodSecurityLevel): Stage<Built> {
  const desired = policed(built.desired, level);
  if ("invalid" in desired) return stop({ ...sized(sizes), invalid: desired.invalid });
  return proceed(built);
}

/** One condition for several problems: the first one's reason, every message. */
function summary(problems: Problem[]): Problem | undefined {
  if (problems.length === 0) return undefined;
  return { reason: problems[0].reason, message: joinedMessages(problems.map((p) => p.message)) };
}
