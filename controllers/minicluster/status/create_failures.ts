/**
 * Why the Job cannot create its pods: the Job controller's own `FailedCreate` Event.
 *
 * When pod creation is refused (Pod Security Admission, a missing ServiceAccount, a quota, a
 * webhook), no pod ever exists and a Job has no condition for it: the only trace is a core/v1
 * Event with reason FailedCreate on the Job, repeated (its count and lastTimestamp grow) each time
 * the Job controller retries. The status names it.
 *
 * Those Events are watched, field-selected by the apiserver to `involvedObject.kind=Job` and
 * `reason=FailedCreate` (stores.ts), so the operator receives only the rare Events it reports and
 * a new one wakes the MiniCluster at once (controller.ts). Asking instead (a list per Job short of
 * pods, every few seconds) cost 1.3 lists per MiniCluster while 1,000 MiniClusters waited for the
 * Job controller to make their pods, each list a scan of the namespace's Events by the apiserver.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import { activePods } from "./status.ts";

const FAILED_CREATE = "FailedCreate";

/** The field selector of the Event watch: only what this file reads. */
export const FAILED_CREATE_SELECTOR = `involvedObject.kind=Job,reason=${FAILED_CREATE}`;

/** An Event last seen longer ago than this is history, not the present cause. */
export const FAILED_CREATE_MAX_AGE_MS = 10 * 60_000;

/** What the status says and when to look again. */
export interface CreateFailure {
  /** `FailedCreate: <the Job controller's message>`, undefined when there is none (recent). */
  message?: string;
  /** When the message ages out, unless a newer Event comes first. */
  recheckMs?: number;
}

/**
 * Why `job` has fewer pods than it should, if the Job controller said so recently; `events` are
 * the watched FailedCreate Events of the Job's namespace.
 */
export function createFailure(
  job: Job | undefined,
  pods: readonly Pod[],
  events: readonly Event[],
  now: number,
): CreateFailure {
  const uid = job?.metadata?.uid;
  if (!job || !uid) return {};
  const finished = job.status?.conditions?.some((c) =>
    (c.type === "Complete" || c.type === "Failed") && c.status === "True"
  );
  const wanted = job.spec?.parallelism ?? 0;
  if (finished || job.spec?.suspend || activePods(pods, job).length >= wanted) return {};
  const recent = events
    .filter((e) => e.involvedObject?.uid === uid && e.reason === FAILED_CREATE)
    .map((e) => ({ e, at: Date.parse(lastSeen(e)) }))
    .filter(({ at }) => Number.isFinite(at) && now - at <= FAILED_CREATE_MAX_AGE_MS)
    .sort((a, b) => b.at - a.at)[0];
  if (!recent) return {};
  return {
    message: `${FAILED_CREATE}: ${recent.e.message ?? ""}`.trim(),
    recheckMs: Math.max(1_000, recent.at + FAILED_CREATE_MAX_AGE_MS - now + 1),
  };
}

/** What the Event cache keeps: what `createFailure` and the controller's mapping read. */
export function failedCreateView(e: Event): Event {
  const m = e.metadata ?? {};
  const o = e.involvedObject ?? {};
  return {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    involvedObject: { kind: o.kind, namespace: o.namespace, name: o.name, uid: o.uid },
    reason: e.reason,
    message: e.message,
    ...(e.series ? { series: { lastObservedTime: e.series.lastObservedTime } } : {}),
    ...(e.lastTimestamp ? { lastTimestamp: e.lastTimestamp } : {}),
    ...(e.eventTime ? { eventTime: e.eventTime } : {}),
    ...(e.firstTimestamp ? { firstTimestamp: e.firstTimestamp } : {}),
  };
}

function lastSeen(e: Event): string {
  return e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ??
    e.metadata?.creationTimestamp ?? "";
}
