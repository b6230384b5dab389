/**
 * The GangScheduling condition (status.ts): whether the MiniCluster's pods are scheduled
 * all-or-nothing (spec.gang) and how the gang fares, in the words of its PodGroup's
 * `PodGroupInitiallyScheduled` condition (pod_group.ts). Present only when the spec asks for a
 * gang or the Job has one, so MiniClusters without a gang keep the conditions they always had.
 *
 * Only a scheduler that enforces gangs answers on the PodGroup: kube-scheduler with the feature
 * gate GenericWorkload writes the condition when it places the gang (before it binds the pods). Pods
 * that run while the PodGroup has no such condition were placed by a scheduler that did not look
 * at it (`spec.pod.schedulerName` names another one, or kube-scheduler runs without the gate): the
 * gang was not enforced, which is said rather than "Pending" for ever.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { jobPodGroup } from "../children/gang.ts";
import { jobCondition, jobSucceeded } from "../lifecycle/lifecycle.ts";
import type { PodGroupState } from "./pod_group.ts";

export const GANG_UNAVAILABLE = "Unavailable";
/** The scheduler's reason on a PodGroup it cannot place. */
export const GANG_UNSCHEDULABLE = "Unschedulable";
/** The pods run, placed by a scheduler that left the PodGroup unanswered. */
export const GANG_NOT_ENFORCED = "NotEnforced";

/** The phases of a pod that a scheduler placed (Pending may be either). */
const PLACED_PHASES = new Set(["Running", "Succeeded", "Failed"]);

/** What the reconcile learnt about the gang. */
export interface GangReport {
  /** spec.gang is set. */
  readonly asked: boolean;
  /** Why the API server does not serve gang scheduling (gang_support.ts). */
  readonly unavailable?: string;
  /** The PodGroup, as read or written in this reconcile. */
  readonly podGroup?: PodGroupState;
}

/** Why the MiniCluster runs unganged where the API lacks gang scheduling. */
const UNGANGED_DEFAULT = "the pods are scheduled one by one, as without spec.gang (the " +
  "brokers wait for each other either way; a gang only keeps partial clusters from holding nodes)";

/**
 * The condition as [status, reason, message], or undefined when there is no gang to report; `pods`
 * are the Job's (status.ts' view: phase and conditions).
 */
export function gangCondition(
  gang: GangReport | undefined,
  job: Job | undefined,
  pods: readonly Pod[] = [],
): [boolean, string, string] | undefined {
  const group = jobPodGroup(job);
  if (!gang?.asked && group === undefined) return undefined;
  if (gang?.unavailable) {
    return [
      false,
      GANG_UNAVAILABLE,
      `gang scheduling is unavailable: ${gang.unavailable}; ${UNGANGED_DEFAULT}`,
    ];
  }
  if (!job) return [false, "JobNotCreated", "the Job does not exist yet"];
  if (group === undefined) {
    return [
      false,
      "JobNotGanged",
      "the running Job was created without a gang; spec.gang applies when the MiniCluster is " +
      "created again",
    ];
  }
  // A finished Job's pods are gone or done: what happened is in the Job. It succeeded only if its
  // lead broker ran, so its gang had been placed.
  if (jobSucceeded(job)) return [true, "Scheduled", `PodGroup ${group}: the gang ran to the end`];
  if (jobCondition(job, "Failed")) return [false, "JobFailed", "the Job failed"];
  const state = gang?.podGroup;
  const minCount = state?.minCount === undefined ? "" : ` (minCount ${state.minCount})`;
  const c = state?.condition;
  if (c?.status === "True") {
    return [true, "Scheduled", `PodGroup ${group}: the gang${minCount} was placed together`];
  }
  if (c?.status === "False") {
    return [false, c.reason || GANG_UNSCHEDULABLE, `PodGroup ${group}: ${c.message ?? ""}`];
  }
  if (!state) return [false, "PodGroupMissing", `PodGroup ${group} does not exist`];
  const scheduler = schedulerNameOf(job);
  const placed = pods.filter((p) => PLACED_PHASES.has(p.status?.phase ?? "")).length;
  if (placed > 0) {
    const size = job.spec?.parallelism ?? placed;
    const by = scheduler
      ? `the scheduler ${scheduler} (spec.pod.schedulerName), which does not answer on PodGroups`
      : "the default scheduler without gang scheduling (kube-scheduler needs the feature gate " +
        "GenericWorkload)";
    return [
      false,
      GANG_NOT_ENFORCED,
      `PodGroup ${group}: ${placed} of ${size} pods run, placed by ${by}: the PodGroup has no ` +
      `PodGroupInitiallyScheduled condition, so the gang${minCount} was not enforced`,
    ];
  }
  const who = scheduler ? `the scheduler ${scheduler} (spec.pod.schedulerName)` : "the scheduler";
  return [false, "Pending", `PodGroup ${group}: ${who} has not placed the gang${minCount} yet`];
}

/** The scheduler the Job's pods ask for, unless it is the default one. */
function schedulerNameOf(job: Job): string | undefined {
  const name = job.spec?.template?.spec?.schedulerName;
  return name && name !== "default-scheduler" ? name : undefined;
}
