/**
 * The gang (spec.gang): a `scheduling.k8s.io/v1beta1` PodGroup of the MiniCluster, which the Job's
 * pod template names (`schedulingGroup.podGroupName`), so kube-scheduler binds none of the Job's
 * pods until `minCount` of them fit (Kubernetes 1.37, feature gate GenericWorkload).
 *
 * The operator makes the PodGroup itself rather than the Job's `spec.scheduling`: the Job
 * controller makes a Workload and PodGroup from `spec.scheduling` only for a Job no controller owns
 * (or one whose owner made a Workload first, which its informer may not have seen when it creates
 * the pods: they would then run unganged for good), and the MiniCluster owns its Job. A pod template
 * that names a PodGroup is left alone by the Job controller.
 *
 * Whether the pods name a PodGroup is part of the Job's pod template, so it is fixed when the Job
 * is created; the PodGroup's minCount is mutable and follows the Job's size: a cluster scaled
 * below its gang is ganged at its size.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Condition, ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import { childMetadata } from "./owner.ts";
import { podGroupName } from "./names.ts";
import type { Sizing } from "./sizing.ts";

/** A scheduling.k8s.io/v1beta1 PodGroup (newer than the kubernetes-types package). */
export interface PodGroup {
  apiVersion?: "scheduling.k8s.io/v1beta1";
  kind?: "PodGroup";
  metadata?: ObjectMeta;
  spec?: { schedulingPolicy?: { gang?: { minCount?: number } } };
  status?: { conditions?: Condition[] };
}

/** The pod spec field that names the PodGroup (newer than the kubernetes-types package). */
export interface SchedulingGroup {
  podGroupName: string;
}

/** The gang's minCount for the Job's pods at `sizing`, or undefined when the spec asks for none. */
export function gangMinCount(mc: DefaultedMiniCluster, sizing: Sizing): number | undefined {
  const gang = mc.spec.gang;
  return gang ? Math.max(1, Math.min(gang.minCount, sizing.effectiveSize)) : undefined;
}

/** The MiniCluster's PodGroup for the Job's pods at `sizing`, or undefined without a gang. */
export function buildPodGroup(mc: DefaultedMiniCluster, sizing: Sizing): PodGroup | undefined {
  const minCount = gangMinCount(mc, sizing);
  if (minCount === undefined) return undefined;
  return {
    apiVersion: "scheduling.k8s.io/v1beta1",
    kind: "PodGroup",
    metadata: childMetadata(mc, podGroupName(mc)),
    spec: { schedulingPolicy: { gang: { minCount } } },
  };
}

/** The pod template's reference to the PodGroup, or undefined without a gang. */
export function schedulingGroup(mc: DefaultedMiniCluster): SchedulingGroup | undefined {
  return mc.spec.gang ? { podGroupName: podGroupName(mc) } : undefined;
}

/** The PodGroup a Job's pods are placed with, when the Job is ganged. */
export function jobPodGroup(job: Job | undefined): string | undefined {
  const spec = job?.spec?.template?.spec as { schedulingGroup?: SchedulingGroup } | undefined;
  return spec?.schedulingGroup?.podGroupName;
}

/** The PodGroup's gang minCount. */
export function podGroupMinCount(group: PodGroup | undefined): number | undefined {
  return group?.spec?.schedulingPolicy?.gang?.minCount;
}
