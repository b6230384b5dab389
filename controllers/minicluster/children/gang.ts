/**
 * The Job's gang policy (spec.gang): batch/v1 `spec.scheduling` of Kubernetes 1.37
 * (`JobSchedulingConfiguration`, feature gate WorkloadWithJob), from which the Job controller makes
 * the Workload and PodGroup that kube-scheduler binds all-or-nothing.
 *
 * The API server keeps `spec.scheduling` as it was created (set or not, gang or basic); only
 * `schedulingPolicy.gang.minCount` may change, and never above parallelism. So minCount follows the
 * Job's size: a cluster scaled below its gang is ganged at its size.
 */
import type { Job, JobSpec } from "kubernetes-types/batch/v1.d.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";

/** `spec.scheduling` of a batch/v1 Job (newer than the kubernetes-types package). */
export interface JobScheduling {
  schedulingPolicy?: { gang?: { minCount?: number }; basic?: Record<string, never> };
}

/** A Job whose spec may carry `scheduling`. */
export type ScheduledJob = Job & { spec?: JobSpec & { scheduling?: JobScheduling } };

/** The gang policy of a Job of `size` pods, or undefined when the spec asks for none. */
export function gangScheduling(mc: DefaultedMiniCluster, size: number): JobScheduling | undefined {
  const gang = mc.spec.gang;
  if (!gang) return undefined;
  return { schedulingPolicy: { gang: { minCount: Math.max(1, Math.min(gang.minCount, size)) } } };
}

/** The live Job's `spec.scheduling`, when it has one. */
export function jobScheduling(job: Job | undefined): JobScheduling | undefined {
  return (job as ScheduledJob | undefined)?.spec?.scheduling;
}

/** The gang's minCount of a Job, when it is ganged. */
export function gangMinCount(job: Job | undefined): number | undefined {
  return jobScheduling(job)?.schedulingPolicy?.gang?.minCount;
}
