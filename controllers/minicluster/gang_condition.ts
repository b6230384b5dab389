/**
 * The GangScheduling condition (status.ts): whether the MiniCluster's pods are scheduled
 * all-or-nothing (spec.gang) and how the gang fares. Present only when the spec asks for a gang or
 * the Job has one, so MiniClusters without a gang keep the conditions they always had.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { gangMinCount } from "./children/gang.ts";
import { jobCondition, jobSucceeded } from "./lifecycle.ts";
import type { PodGroupState } from "./pod_group.ts";
import { isUnscheduled } from "./status.ts";

export const GANG_UNAVAILABLE = "Unavailable";
/** The scheduler's reason on a PodGroup it cannot place. */
export const GANG_UNSCHEDULABLE = "Unschedulable";

/** What the reconcile learnt about the gang. */
export interface GangReport {
  /** spec.gang is set. */
  asked: boolean;
  /** Why the API server does not serve Job gang scheduling (gang_support.ts). */
  unavailable?: string;
  /** The PodGroup of a ganged Job whose pods are not all placed, when it could be read. */
  podGroup?: PodGroupState;
}

/** Why the MiniCluster runs unganged where the API lacks gang scheduling. */
export const UNGANGED_DEFAULT = "the pods are scheduled one by one, as without spec.gang (the " +
  "brokers wait for each other either way; a gang only keeps partial clusters from holding nodes)";

/** The condition as [status, reason, message], or undefined when there is no gang to report. */
export function gangCondition(
  gang: GangReport | undefined,
  job: Job | undefined,
  pods: readonly Pod[],
): [boolean, string, string] | undefined {
  const minCount = gangMinCount(job);
  if (!gang?.asked && minCount === undefined) return undefined;
  if (gang?.unavailable) {
    return [
      false,
      GANG_UNAVAILABLE,
      `gang scheduling is unavailable: ${gang.unavailable}; ${UNGANGED_DEFAULT}`,
    ];
  }
  if (!job) return [false, "JobNotCreated", "the Job does not exist yet"];
  if (minCount === undefined) {
    return [
      false,
      "JobNotGanged",
      "the running Job was created without a gang; spec.gang applies when the MiniCluster is " +
      "created again",
    ];
  }
  // A finished Job's pods are gone or done: what they were is in the Job. It succeeded only if its
  // lead broker ran, so its gang had been placed.
  if (jobSucceeded(job)) {
    return [true, "Scheduled", `the gang (minCount ${minCount}) ran to the end`];
  }
  if (jobCondition(job, "Failed")) return [false, "JobFailed", "the Job failed"];
  const condition = gang?.podGroup?.condition;
  const group = `PodGroup ${gang?.podGroup?.name}`;
  if (condition?.status === "False") {
    return [false, condition.reason || GANG_UNSCHEDULABLE, `${group}: ${condition.message ?? ""}`];
  }
  const unplaced = pods.filter((p) => (p.status?.conditions ?? []).some(isUnscheduled)).length;
  const placed = pods.length - unplaced;
  if (unplaced === 0 && placed >= minCount) {
    return [true, "Scheduled", `the gang (minCount ${minCount}) was placed together`];
  }
  return [
    false,
    "Pending",
    `the scheduler has not placed the gang (minCount ${minCount}) yet: ${placed} pods placed`,
  ];
}
