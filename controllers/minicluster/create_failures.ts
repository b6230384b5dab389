/**
 * Why the Job cannot create its pods: the Job controller's own `FailedCreate` Event.
 *
 * When pod creation is refused (Pod Security Admission, a missing ServiceAccount, a quota, a
 * webhook), no pod ever exists, so nothing the operator watches changes, and a Job has no condition
 * for it: the only trace is a core/v1 Event with reason FailedCreate on the Job, repeated (its
 * count and lastTimestamp grow) each time the Job controller retries. The status names it.
 *
 * API cost: nothing while the Job has all its pods. Only when the cache shows fewer active pods
 * than the Job's parallelism, the Job is older than `graceMs` (normal pod creation takes a moment)
 * and it has not finished, one LIST of Events narrowed by field selector to this Job's uid and the
 * reason, at most once per `intervalMs` per Job (the answer is remembered meanwhile), and the
 * reconcile is requeued at that interval, since no watched object changes while pods are refused.
 * Events were not watched instead: a cluster-wide Event watch costs every operator the traffic of
 * every Event of the cluster to serve the rare broken MiniCluster.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import type { ApiClient } from "../../runtime/api_client.ts";
import { isForbidden, isRetryable } from "../../runtime/errors.ts";
import { Events } from "../../runtime/resources.ts";
import { activePods } from "./status.ts";

/** What the status says and when to look again. */
export interface CreateFailure {
  /** `FailedCreate: <the Job controller's message>`, undefined when there is none (recent). */
  message?: string;
  /** Look again this much later (the Job is short of pods). */
  recheckMs?: number;
}

export interface CreateFailureOptions {
  /** A Job younger than this is not asked about (its pods are still being made). */
  graceMs: number;
  /** At most one LIST per Job this often; also the requeue while pods are missing. */
  intervalMs: number;
  /** An Event last seen longer ago than this is history, not the present cause. */
  maxAgeMs: number;
}

export const CREATE_FAILURE_TIMING: CreateFailureOptions = {
  graceMs: 2_000,
  intervalMs: 10_000,
  maxAgeMs: 10 * 60_000,
};

export const FAILED_CREATE = "FailedCreate";

export class CreateFailures {
  /** By Job uid: the last answer and when it was read. */
  readonly #seen = new Map<string, { at: number; message?: string }>();

  constructor(
    readonly client: ApiClient,
    readonly now: () => Date,
    readonly opts: CreateFailureOptions = CREATE_FAILURE_TIMING,
  ) {}

  /** Why `job` has fewer pods than it should, if the Job controller said so. */
  async of(job: Job | undefined, pods: readonly Pod[]): Promise<CreateFailure> {
    const uid = job?.metadata?.uid;
    if (!job || !uid) return {};
    const finished = job.status?.conditions?.some((c) =>
      (c.type === "Complete" || c.type === "Failed") && c.status === "True"
    );
    const wanted = job.spec?.parallelism ?? 0;
    if (finished || job.spec?.suspend || activePods(pods, job).length >= wanted) {
      this.#seen.delete(uid);
      return {};
    }
    const now = this.now().getTime();
    const age = now - Date.parse(job.metadata?.creationTimestamp ?? "");
    if (age < this.opts.graceMs) return { recheckMs: this.opts.graceMs - age };
    const cached = this.#seen.get(uid);
    if (cached && now - cached.at < this.opts.intervalMs) {
      return { message: cached.message, recheckMs: cached.at + this.opts.intervalMs - now };
    }
    const message = await this.#read(job, now);
    this.#seen.set(uid, { at: now, message });
    return { message, recheckMs: this.opts.intervalMs };
  }

  /** The Job is gone: forget it. */
  forget(uid: string | undefined): void {
    if (uid) this.#seen.delete(uid);
  }

  async #read(job: Job, now: number): Promise<string | undefined> {
    let events: Event[];
    try {
      events = (await this.client.list<Event>(Events, {
        namespace: job.metadata?.namespace,
        fieldSelector: `involvedObject.uid=${job.metadata?.uid},reason=${FAILED_CREATE}`,
      })).items;
    } catch (e) {
      // Best effort: the status without the cause is what it was before; an RBAC set without
      // "list events" must not stop reconciling.
      if (isForbidden(e) || isRetryable(e)) return undefined;
      throw e;
    }
    const recent = events
      .map((e) => ({ e, at: Date.parse(lastSeen(e)) }))
      .filter(({ at }) => Number.isFinite(at) && now - at <= this.opts.maxAgeMs)
      .sort((a, b) => b.at - a.at)[0];
    return recent ? `${FAILED_CREATE}: ${recent.e.message ?? ""}`.trim() : undefined;
  }
}

function lastSeen(e: Event): string {
  return e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ??
    e.metadata?.creationTimestamp ?? "";
}
