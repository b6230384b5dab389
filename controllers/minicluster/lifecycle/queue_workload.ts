/**
 * Kueue's Workload for the Job of a MiniCluster queued by Kueue (children/queue.ts): what it says
 * about the Job's admission, for the status, and the one field the operator writes on it,
 * `spec.active`, which carries out the user's `spec.suspend`.
 *
 * Why not the Job's `spec.suspend`: Kueue resumes an admitted Job that anyone else suspends (its
 * Job reconciler starts a suspended Job whose Workload is admitted), so the operator and Kueue
 * would write the field back and forth. A deactivated Workload is evicted: Kueue suspends the Job,
 * gives back its quota and does not admit it again until it is active. Reactivated, it queues
 * again and runs only when admitted. The operator reactivates only a Workload it alone
 * deactivated (read from its managedFields), never one Kueue deactivated (after too many
 * requeues, say).
 *
 * Not watched: the Workload CRD exists only where Kueue is installed, and a watch of a resource
 * the API server lacks would fail everywhere else. It is listed by Kueue's job-uid label, and only
 * while the Job is suspended or the spec suspends it, so a running MiniCluster costs no request.
 * Whether the Job has a Workload decides how `spec.suspend` is carried out: through it, or (no
 * Workload: Kueue absent, without its batch/job integration, or not tracking the Job) on the Job.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Condition, OwnerReference } from "kubernetes-types/meta/v1.d.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import { isForbidden, isNotFound } from "../../../runtime/client/errors.ts";
import type { FreshnessFence } from "../../../runtime/controller/freshness_fence.ts";
import { resourceType } from "../../../runtime/client/resources.ts";
import { FIELD_MANAGER } from "../children/names.ts";

export const KueueWorkloads = resourceType(
  "kueue.x-k8s.io",
  "v1beta2",
  "workloads",
  "Workload",
  true,
);

/** Kueue labels each Workload with the UID of the Job it queues. */
export const KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid";

export interface KueueWorkload {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    ownerReferences?: OwnerReference[];
    managedFields?: { manager?: string; subresource?: string; fieldsV1?: unknown }[];
  };
  spec?: { active?: boolean; queueName?: string };
  status?: { conditions?: Condition[] };
}

/** Kueue's eviction reason for a Workload whose `spec.active` is false. */
const DEACTIVATED = "Deactivated";

/** What the status reports of a queued MiniCluster's Workload. */
export interface QueueReport {
  /** The LocalQueue the Job is labelled for. */
  queue: string;
  /** The Workload's name, once Kueue made one. */
  workload?: string;
  /** Its `spec.active` is false. */
  inactive?: boolean;
  /** Its Evicted condition while True (reason Preempted, InactiveWorkload, ...). */
  evicted?: { reason: string; message: string };
  /** Why it has no quota yet (its QuotaReserved condition while False). */
  pending?: string;
  /**
   * The Job is labelled but Kueue does not track it (no Workload: `unserved`, Kueue's Workloads
   * are not served; `none`, Kueue made none for it), so the operator suspends the Job itself.
   */
  untracked?: "unserved" | "none";
}

const trueCondition = (wl: KueueWorkload, type: string) =>
  wl.status?.conditions?.find((c) => c.type === type && c.status === "True");

/** The report of `wl` (undefined: Kueue has made none for the Job yet, or is not installed). */
export function queueReport(queue: string, wl: KueueWorkload | undefined): QueueReport {
  if (!wl) return { queue };
  // Evicted stays True until the Workload is admitted again; a deactivation is over once it is
  // active again (the operator reactivated it), and it is waiting like any other.
  const over = (c: Condition) => c.reason === DEACTIVATED && wl.spec?.active !== false;
  const evicted = [trueCondition(wl, "Evicted")].find((c) => c && !over(c));
  const reserved = wl.status?.conditions?.find((c) => c.type === "QuotaReserved");
  return {
    queue,
    workload: wl.metadata?.name,
    ...(wl.spec?.active === false ? { inactive: true } : {}),
    ...(evicted
      ? { evicted: { reason: evicted.reason ?? "", message: evicted.message ?? "" } }
      : {}),
    ...(reserved?.status === "False" && reserved.message ? { pending: reserved.message } : {}),
  };
}

/** What a read of the Job's Workload found. */
export interface WorkloadRead {
  /** The API server serves Kueue's Workloads (false: Kueue is absent, or older than v0.15). */
  served: boolean;
  /** The Job's Workload, when Kueue made one. */
  workload?: KueueWorkload;
}

/** `wl` names `job` as its controlling owner (Kueue makes it so). */
function controlledBy(wl: KueueWorkload, job: Job): boolean {
  const uid = job.metadata?.uid;
  return (wl.metadata?.ownerReferences ?? []).some((r) =>
    r.controller === true && r.uid === uid && r.kind === "Job"
  );
}

/**
 * The Workload of `job`: Kueue makes one per Job (more only for an elastic Job being resized, of
 * which the newest is the current one), labelled with the Job's uid and controlled by the Job. A
 * Workload that carries the label but is not controlled by the Job is someone else's (anyone who
 * may create Workloads can copy a label), and is ignored. Where Workloads are not served, or the
 * operator may not read them (a refusal other than a transient one is not the MiniCluster's
 * problem), the Job has none: the operator then suspends the Job itself.
 */
export async function readQueueWorkload(client: ApiClient, job: Job): Promise<WorkloadRead> {
  const uid = job.metadata?.uid;
  if (!uid) return { served: true };
  try {
    const list = await client.list<KueueWorkload>(KueueWorkloads, {
      namespace: job.metadata?.namespace,
      labelSelector: `${KUEUE_JOB_UID_LABEL}=${uid}`,
    });
    const newest = (a: KueueWorkload, b: KueueWorkload) =>
      (b.metadata?.creationTimestamp ?? "").localeCompare(a.metadata?.creationTimestamp ?? "");
    const workload = list.items.filter((wl) => controlledBy(wl, job)).sort(newest)[0];
    return workload ? { served: true, workload } : { served: true };
  } catch (e) {
    if (isNotFound(e) || isForbidden(e)) return { served: false };
    throw e;
  }
}

/** The field managers that own the Workload's `spec.active`. */
function activeOwners(wl: KueueWorkload): string[] {
  return (wl.metadata?.managedFields ?? [])
    .filter((m) => {
      const spec = (m.fieldsV1 as Record<string, Record<string, unknown>> | undefined)?.["f:spec"];
      return !m.subresource && spec?.["f:active"] !== undefined;
    })
    .map((m) => m.manager ?? "");
}

/**
 * The `spec.active` to write so that the Workload follows `suspend`, or undefined when it already
 * does or is not the operator's to change: deactivated for a suspended MiniCluster; reactivated
 * only when the operator alone deactivated it.
 */
export function activeToWrite(wl: KueueWorkload, suspend: boolean): boolean | undefined {
  const active = wl.spec?.active !== false;
  if (suspend) return active ? false : undefined;
  if (active) return undefined;
  const owners = activeOwners(wl);
  return owners.length > 0 && owners.every((o) => o === FIELD_MANAGER) ? true : undefined;
}

/**
 * Makes the Workload's `spec.active` follow `suspend` (a merge patch, after the fence); returns
 * the Workload as it is now. A Workload gone meanwhile (the Job finished or was deleted) is left.
 */
export async function followSuspend(
  client: ApiClient,
  wl: KueueWorkload,
  suspend: boolean,
  fence: FreshnessFence,
): Promise<KueueWorkload> {
  const active = activeToWrite(wl, suspend);
  if (active === undefined) return wl;
  await fence.check();
  try {
    return await client.patch<KueueWorkload>(
      KueueWorkloads,
      wl.metadata?.namespace,
      wl.metadata!.name!,
      { spec: { active } },
      "merge",
      { fieldManager: FIELD_MANAGER },
    );
  } catch (e) {
    if (isNotFound(e)) return wl;
    throw e;
  }
}
