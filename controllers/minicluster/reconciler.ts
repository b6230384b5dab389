/**
 * The MiniCluster reconciler: `reconcile(mc, ctx) → Action`, level-triggered and idempotent.
 *
 *   finalizer → validate → sizes → dependents → status
 *
 * Every run recomputes the whole desired state from the spec and the workspace's sizes, lets each
 * dependent compare itself with the cache and write only what differs (dependents.ts), then derives
 * the status from what it observed and writes it only when it changed (status_writer.ts). An
 * unchanged MiniCluster therefore costs zero writes.
 *
 * Problems that retrying cannot fix (an invalid spec, a Job field a running Job cannot take, an API
 * rejection, a name someone else holds) become conditions and Events and the reconcile ends
 * normally: it runs again when something changes. Only transient failures (throttling, server
 * errors, conflicts) are thrown, so the controller retries them with backoff. A view of the
 * MiniCluster older than the live one writes no child: the workspace, the PodGroup and the
 * dependents pass the freshness fence before their first write, and a stale view ends the reconcile
 * to wait for the cache. The fence does not cover the status write and the Events (written from the
 * view as it is); the self-deletion of a finished MiniCluster carries the view's resourceVersion as
 * a precondition instead.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import {
  type DefaultedMiniCluster,
  type MiniCluster,
  validateSpec,
  withDefaults,
} from "../../api/mod.ts";
import type { ApiClient } from "../../runtime/api_client.ts";
import { Action, type ReconcileContext, type Reconciler } from "../../runtime/controller.ts";
import {
  created,
  deleteUnchanged,
  DependentResources,
  type Problem,
} from "../../runtime/dependents.ts";
import { errorMessage } from "../../runtime/errors.ts";
import { Finalizer } from "../../runtime/finalizer.ts";
import { type FreshnessFence, StaleViewError } from "../../runtime/freshness_fence.ts";
import { Jobs } from "../../runtime/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import type { RuntimeLog } from "../../runtime/log.ts";
import { curveSecretName, FIELD_MANAGER, FINALIZER } from "./children/names.ts";
import { curveProblems } from "./curve_integrity.ts";
import { curveSource, type GivenCurveCert, type InlineCurveCertPolicy } from "./curve_source.ts";
import { Cleanup } from "./cleanup.ts";
import { type CurveBuilders, defaultCurve, miniClusterDependents } from "./dependents.ts";
import { BuildError, type DesiredChildren, desiredChildren } from "./desired.ts";
import type { EventRecorder } from "./events.ts";
import { afterFinish, type Deletion } from "./finished.ts";
import { type PodSecurityLevel, policed } from "./pod_security.ts";
import { joinedMessages } from "./messages.ts";
import { HeldSuspensions } from "./held_suspensions.ts";
import { RecreateBudget } from "./services_pod_drift.ts";
import { StatusWriter } from "./status_writer.ts";
import { type MiniClusterStores, ownJob } from "./stores.ts";
import { jobPodGroup } from "./children/gang.ts";
import type { GangReport } from "./gang_condition.ts";
import { GangSupportProbe } from "./gang_support.ts";
import { ensurePodGroup, type PodGroupState, readPodGroup } from "./pod_group.ts";
import { TIMING } from "./timing.ts";
import { kueueQueueOf } from "./children/queue.ts";
import {
  followSuspend,
  type QueueReport,
  queueReport,
  readQueueWorkload,
} from "./queue_workload.ts";
import { type Sizes, WorkspaceResolver } from "./workspace.ts";

export type { MiniClusterStores } from "./stores.ts";

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
  readonly #dependents: DependentResources;
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
    this.#dependents = new DependentResources(client, FIELD_MANAGER);
    this.#gangSupport = new GangSupportProbe(client, () => now().getTime());
    this.#workspace = new WorkspaceResolver(this.#dependents, client, stores, recorder);
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

  async #apply(mc: MiniCluster, fence: FreshnessFence, ctx: ReconcileContext): Promise<Action> {
    const log = ctx.log;
    const requestedSize = mc.spec?.size ?? 1;
    const spec = validated(mc);
    if ("invalid" in spec) return await this.#status.write(mc, { requestedSize, ...spec });
    try {
      const sizes = await this.#workspace.sizes(spec, requestedSize, fence);
      if ("problem" in sizes) {
        const action = await this.#status.write(mc, { requestedSize, unappliable: sizes.problem });
        return Action.soonest(action, sizes.requeueAfterMs);
      }
      const curve = await curveSource(this.#client, spec, this.#inlineCurveCert);
      if ("invalid" in curve) return await this.#status.write(mc, { ...sizes, ...curve });
      if ("problem" in curve) {
        const action = await this.#status.write(mc, { ...sizes, unappliable: curve.problem });
        return Action.soonest(action, curve.recheckMs);
      }
      const given = "text" in curve ? curve : undefined;
      // What the running brokers depend on follows their Job's subdomain, not the spec's.
      const running = ownJob(this.#stores, spec);
      const runningSubdomain = running?.spec?.template?.spec?.subdomain;
      let desired = policed(
        await built(spec, sizes, { given, runningSubdomain }),
        this.#podSecurity,
      );
      if ("invalid" in desired) return await this.#status.write(mc, { ...sizes, ...desired });
      // A gang the API server does not serve: the MiniCluster runs unganged (gang_condition.ts).
      const gang: GangReport = { asked: spec.spec.gang !== undefined };
      if (gang.asked && jobPodGroup(running) === undefined) {
        const support = await this.#gangSupport.check(desired.job);
        if (!support.served) {
          gang.unavailable = support.why;
          desired = policed(
            await built(spec, sizes, { given, runningSubdomain, unganged: true }),
            this.#podSecurity,
          );
          if ("invalid" in desired) return await this.#status.write(mc, { ...sizes, ...desired });
        }
      }
      // The PodGroup goes before the Job whose pods name it (pod_group.ts).
      const group = await this.#podGroup(spec, desired, running, fence);
      const groupProblem = group && "problem" in group ? group.problem : undefined;
      if (groupProblem && !running) {
        return await this.#status.write(mc, { ...sizes, unappliable: groupProblem, gang });
      }
      if (group && !("problem" in group)) gang.podGroup = group;

      const plan = miniClusterDependents(spec, desired, sizes, this.#stores, {
        curve: this.#curve,
        recorder: this.#recorder,
        recreates: this.#recreates,
        client: this.#client,
        held: this.#held,
      });
      const outcome = await this.#dependents.reconcile(mc, plan, fence);
      if (outcome.retry !== undefined) {
        await this.#reportFailing(mc, sizes, outcome.problems, ctx);
        throw outcome.retry;
      }
      // The workspace holds other sizes than the new MiniCluster's assumed ones: build again.
      if (outcome.stopped) return Action.requeueAfter(0);

      const queue = await this.#queue(spec, fence);
      const end = afterFinish(spec, this.#stores, this.#now());
      if ("delete" in end) return await this.#deleteSelf(mc, end.delete, log);
      const problems = [
        ...outcome.problems,
        ...(groupProblem ? [groupProblem] : []),
        ...this.#curveProblems(mc, desired),
      ];
      const action = await this.#status.write(mc, {
        ...sizes,
        unappliable: summary(problems),
        jobCreated: created(outcome, Jobs),
        gang,
        queue,
      });
      return Action.soonest(Action.soonest(action, outcome.requeueAfterMs), end.requeueAfterMs);
    } catch (e) {
      if (!(e instanceof StaleViewError)) throw e;
      log.debug("stale view of the MiniCluster; waiting for the cache", { reason: e.message });
      return Action.requeueAfter(STALE_VIEW_REQUEUE_MS);
    }
  }

  /**
   * A write that keeps failing (this is a retry of a reconcile that failed too) is reported now,
   * with the API's message, while the controller goes on retrying with backoff: an object over
   * etcd's size limit fails as a server error, which retrying never fixes. A single failure writes
   * nothing, so that one blip of the API server does not flap the conditions.
   */
  async #reportFailing(mc: MiniCluster, sizes: Sizes, problems: Problem[], ctx: ReconcileContext) {
    if (ctx.retries < 1) return;
    try {
      await this.#status.write(mc, { ...sizes, unappliable: summary(problems) });
    } catch (e) {
      ctx.log.debug("could not report the failing write", { error: errorMessage(e) });
    }
  }

  /**
   * The gang's PodGroup, written when the spec has one and the Job is new or ganged (an unganged
   * running Job cannot take it); only read while a ganged Job runs without spec.gang.
   */
  async #podGroup(
    mc: DefaultedMiniCluster,
    desired: DesiredChildren,
    running: Job | undefined,
    fence: FreshnessFence,
  ): Promise<PodGroupState | { problem: Problem } | undefined> {
    const ganged = jobPodGroup(running);
    if (desired.podGroup && (!running || ganged !== undefined)) {
      return await ensurePodGroup(this.#client, desired.podGroup, fence);
    }
    return ganged ? await readPodGroup(this.#client, mc.metadata?.namespace, ganged) : undefined;
  }

  /**
   * Kueue's Workload of a queued MiniCluster's Job, made to follow spec.suspend (queue_workload.ts):
   * read only while the Job is suspended or the spec suspends it.
   */
  async #queue(mc: DefaultedMiniCluster, fence: FreshnessFence): Promise<QueueReport | undefined> {
    const queue = kueueQueueOf(mc);
    if (!queue) return undefined;
    const job = ownJob(this.#stores, mc);
    const suspend = mc.spec.suspend === true;
    if (!job || (!suspend && job.spec?.suspend !== true)) return { queue };
    const workload = await readQueueWorkload(this.#client, job);
    if (!workload) return { queue };
    return queueReport(queue, await followSuspend(this.#client, workload, suspend, fence));
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
   * The MiniCluster finished and its spec says to go (finished.ts): it deletes itself, but only as
   * the version this was decided from. A view behind the live object (the TTL raised or cleanup
   * cleared while the watch lags) deletes nothing and decides again from a fresher one.
   */
  async #deleteSelf(mc: MiniCluster, why: Deletion, log: RuntimeLog): Promise<Action> {
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

/** The defaulted MiniCluster, or why its spec cannot be used. */
function validated(mc: MiniCluster): DefaultedMiniCluster | { invalid: Problem } {
  try {
    const problems = validateSpec(mc);
    if (problems.length === 0) return withDefaults(mc);
    return { invalid: { reason: "ValidationFailed", message: joinedMessages(problems) } };
  } catch (e) {
    return { invalid: { reason: "ValidationFailed", message: errorMessage(e) } };
  }
}

/**
 * The desired children at `sizes` (beside a running Job in `runningSubdomain`), or why the
 * builders cannot make them.
 */
async function built(
  mc: DefaultedMiniCluster,
  sizes: Sizes,
  opts: { given?: GivenCurveCert; runningSubdomain?: string; unganged?: boolean },
): Promise<DesiredChildren | { invalid: Problem }> {
  try {
    const sizing = { size: sizes.effectiveSize, maxSize: sizes.maximumSize };
    return await desiredChildren(mc, sizing, opts);
  } catch (e) {
    if (!(e instanceof BuildError)) throw e;
    return { invalid: { reason: "BuildFailed", message: e.message } };
  }
}

/** One condition for several problems: the first one's reason, every message. */
function summary(problems: Problem[]): Problem | undefined {
  if (problems.length === 0) return undefined;
  return { reason: problems[0].reason, message: joinedMessages(problems.map((p) => p.message)) };
}
