/**
 * Writes a MiniCluster's status: when, how often, and the Events that go with it.
 *
 * The status itself is a pure function of observations (status.ts): the Job and its pods as the
 * cache shows them after this reconcile's writes, the sizes and the problems the reconcile met. It
 * is written by server-side apply of the status subresource only when it differs from the stored
 * one, followed (once the server stored it) by an Event for every condition that changed status or
 * reason, so an unchanged MiniCluster costs nothing. Two pacing rules, each timed by the
 * `StatusTiming` the writer is made with (timing.ts):
 *
 * - right after creating the Job the status could only say "no pods yet": it is first written
 *   `firstStatusDelayMs` later, with whatever the pods have done by then (`--pacing-off=
 *   first-status-delay` writes it at once);
 * - a change that only reports progress (another pod ready) waits until `progressIntervalMs`
 *   after this process's last status write for that MiniCluster; transitions go at once.
 *
 * How long a first status actually waited after its Job was created is on /metrics
 * (first_status_metric.ts).
 *
 * Deciding and writing are apart: `plan` says what is due (the status, or which pacing rule holds
 * it back and for how long) without any IO, and `write` writes a planned status with its Events.
 * The write goes behind the reconcile's freshness fence (reconciler.ts, finish), as a precondition
 * on the view's resourceVersion when no other write of the reconcile read the fence.
 */
import { type MiniCluster, specSizes } from "../../../api/mod.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import type { FreshnessFence } from "../../../runtime/controller/freshness_fence.ts";
import { Action, TerminalError } from "../../../runtime/controller/controller.ts";
import type { Problem } from "../../../runtime/controller/dependents.ts";
import {
  ApiError,
  errorMessage,
  isConflict,
  isNotFound,
  isRetryable,
} from "../../../runtime/client/errors.ts";
import { MiniClusters } from "../../../api/resource.ts";
import { FIELD_MANAGER, scaleSelector } from "../children/names.ts";
import { createFailure } from "./create_failures.ts";
import { gangCondition, type GangReport } from "../gang/gang_condition.ts";
import { drainCondition } from "./drain_condition.ts";
import { conditionEvents, type EventRecorder } from "./events.ts";
import type { MiniClusterStores } from "../kinds/child_kinds.ts";
import { INVOLVED_INDEX, ownJob, podsOf } from "../kinds/stores.ts";
import { computeStatus, type MiniClusterStatus, progressOnly, sameStatus } from "./status.ts";
import { STATUS_TIMING, type StatusTiming } from "../timing.ts";
import type { QueueReport } from "../lifecycle/queue_workload.ts";
import { FirstStatusDelays } from "./first_status_metric.ts";
import { Registry } from "../../../runtime/metrics/metrics.ts";
import type { FluxQueueObservation, FluxQueueSnapshot } from "../fluxqueue/observation.ts";

/** What a reconcile found, for the status. */
export interface StatusReport {
  /** spec.size as the user asked for it. */
  readonly requestedSize: number;
  /** The size applied to the Job (clamped to the maximum); the requested one when unknown. */
  readonly effectiveSize?: number;
  /** The maximum the workspace fixed; the spec's when unknown. */
  readonly maximumSize?: number;
  /** The spec cannot be built. */
  readonly invalid?: Problem;
  /** Something of the spec could not be applied. */
  readonly unappliable?: Problem;
  /** This reconcile created the Job. */
  readonly jobCreated?: boolean;
  /** The gang, when the spec asks for one (gang_condition.ts). */
  readonly gang?: GangReport;
  /** Kueue's Workload, when the MiniCluster is queued by Kueue (queue_workload.ts). */
  readonly queue?: QueueReport;
  /** Flux's queue as the poller knows it, when the spec asks for it (fluxqueue/poller.ts). */
  readonly fluxQueue?: FluxQueueObservation;
}

/** Why a changed status is not written yet (the two pacing rules above). */
export type StatusPacing = "firstStatus" | "progress";

/** What is due for a MiniCluster's status: a write, a wait, or nothing. */
export interface StatusPlan {
  /** The status to write now, with an Event per changed condition; undefined when none is due. */
  status?: MiniClusterStatus;
  /** Which pacing rule holds a changed status back (`action` says until when). */
  paced?: StatusPacing;
  /** When to look again (a paced write, or a FailedCreate message that ages out). */
  action: Action;
}

export interface StatusWriterOptions {
  /** When a changed status is written; `STATUS_TIMING` by default. */
  timing?: StatusTiming;
  /** Where the first-status delay is observed (the manager's, served on /metrics). */
  metrics?: Registry;
}

export class StatusWriter {
  /** By "namespace/name": when this process last wrote that MiniCluster's status (ms). */
  readonly #writtenAt = new Map<string, number>();
  /** By "namespace/name": when a reconcile created the Job whose first status is not written. */
  readonly #jobCreatedAt = new Map<string, number>();
  readonly timing: StatusTiming;
  readonly #firstStatusDelays: FirstStatusDelays;

  constructor(
    readonly client: ApiClient,
    readonly stores: Pick<MiniClusterStores, "jobs" | "pods" | "jobEvents">,
    readonly recorder: EventRecorder,
    readonly now: () => Date,
    opts: StatusWriterOptions = {},
  ) {
    this.timing = opts.timing ?? STATUS_TIMING;
    this.#firstStatusDelays = new FirstStatusDelays(opts.metrics ?? new Registry());
  }

  /** What `report` makes of the status: whether it changed and is due; no IO. */
  plan(mc: MiniCluster, report: StatusReport): StatusPlan {
    const { firstStatusDelay, firstStatusDelayMs, progressIntervalMs } = this.timing;
    if (report.jobCreated) this.#jobCreatedAt.set(keyOf(mc), this.#nowMs());
    if (report.jobCreated && !report.unappliable && firstStatusDelay) {
      return { paced: "firstStatus", action: Action.requeueAfter(firstStatusDelayMs) };
    }
    const { status, recheckMs } = this.#compute(mc, report);
    // A FailedCreate message ages out unless the Job controller repeats it (create_failures.ts).
    const idle = recheckMs === undefined ? Action.awaitChange() : Action.requeueAfter(recheckMs);
    if (sameStatus(status, mc.status)) {
      // The stored status already says it (a Job made again): no first write to time.
      this.#jobCreatedAt.delete(keyOf(mc));
      return { action: idle };
    }
    const last = this.#writtenAt.get(keyOf(mc));
    const wait = last === undefined ? 0 : last + progressIntervalMs - this.#nowMs();
    if (wait > 0 && progressOnly(mc.status, status)) {
      return { paced: "progress", action: Action.soonest(Action.requeueAfter(wait), recheckMs) };
    }
    return { status, action: idle };
  }

  /**
   * Writes the planned `status` of `mc` behind `fence`, then, once it is stored, the Events of the
   * conditions that changed. When no write of this reconcile has read the fence yet, the status
   * write is the fence itself: it carries the view's resourceVersion, and only a refusal (the
   * MiniCluster changed since the view) reads the live object, which must still have the view's
   * generation.
   */
  async write(mc: MiniCluster, status: MiniClusterStatus, fence: FreshnessFence): Promise<void> {
    const now = this.#nowMs();
    const events = conditionEvents(mc.status?.conditions, status.conditions);
    let stored: boolean;
    if (fence.confirmed) {
      stored = await this.#apply(mc, status);
    } else {
      try {
        stored = await this.#apply(mc, status, mc.metadata?.resourceVersion);
      } catch (e) {
        if (!isConflict(e)) throw e;
        await fence.check();
        stored = await this.#apply(mc, status);
      }
    }
    // Only once the status is stored: an Event must not announce a condition the server refused
    // (a stale view, a denying admission policy, a failing etcd) or a MiniCluster that is gone.
    if (stored) await this.recorder.emitAll(mc, events);
    const key = keyOf(mc);
    this.#writtenAt.set(key, now);
    const jobCreatedAt = this.#jobCreatedAt.get(key);
    if (jobCreatedAt !== undefined) {
      if (stored) this.#firstStatusDelays.observe((now - jobCreatedAt) / 1000);
      this.#jobCreatedAt.delete(key);
    }
  }

  #nowMs(): number {
    return this.now().getTime();
  }

  /** The MiniCluster is gone: forget when its status was written. */
  forget(key: string): void {
    this.#writtenAt.delete(key);
    this.#jobCreatedAt.delete(key);
  }

  #compute(
    mc: MiniCluster,
    report: StatusReport,
  ): { status: MiniClusterStatus; recheckMs?: number } {
    const job = ownJob(this.stores, mc);
    const pods = job ? podsOf(this.stores, mc) : [];
    const uid = job?.metadata?.uid;
    const events = uid ? this.stores.jobEvents.byIndex(INVOLVED_INDEX, uid) : [];
    const failure = report.invalid ? {} : createFailure(job, pods, events, this.now().getTime());
    const status = computeStatus({
      generation: mc.metadata?.generation,
      selector: scaleSelector(mc),
      requestedSize: report.requestedSize,
      effectiveSize: report.effectiveSize ?? report.requestedSize,
      // A reconcile that stopped before the sizes shows the spec's.
      maximumSize: report.maximumSize ?? specSizes(mc.spec).maxSize,
      invalid: report.invalid,
      unappliable: report.unappliable,
      job,
      pods,
      suspendRequested: mc.spec?.suspend === true,
      queue: report.queue,
      createFailure: failure.message,
      gang: gangCondition(report.gang ?? { asked: mc.spec?.gang !== undefined }, job, pods),
      fluxQueue: report.fluxQueue,
      // Written by this operator only (the status subresource): a snapshot it made.
      previousFluxQueue: mc.status?.fluxQueue as FluxQueueSnapshot | undefined,
      drain: drainCondition(mc.spec?.flux?.drainGracePeriodSeconds, job, pods),
      previous: mc.status?.conditions,
      now: rfc3339(this.now()),
    });
    return { status, recheckMs: failure.recheckMs };
  }

  /** Applies `status`; false when the MiniCluster is gone (nothing stored, nothing to retry). */
  async #apply(
    mc: MiniCluster,
    status: MiniClusterStatus,
    resourceVersion?: string,
  ): Promise<boolean> {
    const { name, namespace } = mc.metadata ?? {};
    try {
      await this.client.apply<MiniCluster>(
        MiniClusters,
        {
          apiVersion: "flux-framework.org/v1alpha2",
          kind: "MiniCluster",
          metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
          status,
        } as unknown as MiniCluster,
        // A report: it waits behind the writes that make the children (runtime/pacing/pacing.ts).
        { fieldManager: FIELD_MANAGER, force: true, subresource: "status", priority: "low" },
      );
      return true;
    } catch (e) {
      if (isNotFound(e)) return false; // deleted meanwhile
      // A status the API refuses (or may not be written by us) will be refused again: record it
      // once instead of retrying in a loop; the next change of the MiniCluster tries again.
      if (e instanceof ApiError && !isRetryable(e) && !isConflict(e)) {
        throw new TerminalError(`writing the status of MiniCluster ${name}: ${errorMessage(e)}`);
      }
      throw e;
    }
  }
}

/** "namespace/name", the workqueue key of a MiniCluster. */
function keyOf(mc: MiniCluster): string {
  return `${mc.metadata?.namespace}/${mc.metadata?.name}`;
}

/** RFC 3339 without fractional seconds, as metav1.Time serializes. */
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}
