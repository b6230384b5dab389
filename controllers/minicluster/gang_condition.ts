/**
 * The GangScheduling condition (status.ts): whether the MiniCluster's pods are scheduled
 * all-or-nothing (spec.gang) and how the gang fares, in the words of its PodGroup's
 * `PodGroupInitiallyScheduled` condition (pod_group.ts). Present only when the spec asks for a
 * gang or the Job has one, so MiniClusters without a gang keep the conditions they always had.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { jobPodGroup } from "./children/gang.ts";
import { jobCondition, jobSucceeded } from "./lifecycle.ts";
import type { PodGroupState } from "./pod_group.ts";

export const GANG_UNAVAILABLE = "Unavailable";
/** The scheduler's reason on a PodGroup it cannot place. */
export const GANG_UNSCHEDULABLE = "Unschedulable";

/** What the reconcile learnt about the gang. */
export interface GangReport {
  /** spec.gang is set. */
  asked: boolean;
  /** Why the API server does not serve gang scheduling (gang_support.ts). */
  unavailable?: string;
  /** The PodGroup, as read or written in this reconcile. */
  podGroup?: PodGroupState;
}

/** Why the MiniCluster runs unganged where the API lacks gang scheduling. */
const UNGANGED_DEFAULT = "the pods are scheduled one by one, as without spec.gang (the " +
  "brokers wait for each other either way; a gang only keeps partial clusters from holding nodes)";

/** The condition as [status, reason, message], or undefined when there is no gang to report. */
export function gangCondition(
  gang: GangReport | undefined,
  job: Job | undefined,
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
  return [
    false,
    "Pending",
    `PodGroup ${group}: the scheduler has not placed the gang${minCount} yet`,
  ];
}
