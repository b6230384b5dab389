/**
 * batch/v1 Job `spec.scheduling` (`JobSchedulingConfiguration`) of Kubernetes 1.37, which the
 * `kubernetes-types` package (1.30) does not have; field for field as k8s.io/api v0.37.2
 * (batch/v1 and the scheduling/v1alpha3 building blocks it embeds). Kept only with the
 * WorkloadWithJob feature gate: where it is off the apiserver drops the field without an error;
 * before 1.37 it is an unknown field (dropped with a warning, refused under strict validation).
 *
 * The apiserver keeps it as created: set or not, gang or basic, constraints, disruption mode and
 * claims are immutable; only `schedulingPolicy.gang.minCount` may change, never above the Job's
 * parallelism.
 */
import type { Job, JobSpec } from "kubernetes-types/batch/v1.d.ts";

export interface JobSchedulingConfiguration {
  /** Exactly one of `basic` and `gang`. */
  schedulingPolicy?: WorkloadPodGroupSchedulingPolicy;
  schedulingConstraints?: WorkloadPodGroupSchedulingConstraints;
  /** Exactly one of `single` and `all`. */
  disruptionMode?: WorkloadPodGroupDisruptionMode;
  /** At most 4; a list map keyed by `name`. */
  resourceClaims?: WorkloadPodGroupResourceClaim[];
}

export interface WorkloadPodGroupSchedulingPolicy {
  /** Pod-by-pod scheduling, as without a policy. */
  basic?: Record<string, never>;
  /** All-or-nothing: no pod binds until `minCount` of them fit. */
  gang?: WorkloadPodGroupGangSchedulingPolicy;
}

export interface WorkloadPodGroupGangSchedulingPolicy {
  /** At least 1; omitted, the Job controller uses the Job's parallelism. */
  minCount?: number;
}

export interface WorkloadPodGroupSchedulingConstraints {
  topology?: TopologyConstraint[];
}

export interface TopologyConstraint {
  /** A node label key: every pod of the group lands in one domain of it. */
  key: string;
}

export interface WorkloadPodGroupDisruptionMode {
  single?: Record<string, never>;
  all?: Record<string, never>;
}

export interface WorkloadPodGroupResourceClaim {
  name: string;
  resourceClaimName?: string;
  resourceClaimTemplateName?: string;
}

/** A Job whose spec may carry `scheduling`. */
export type ScheduledJob = Job & { spec?: JobSpec & { scheduling?: JobSchedulingConfiguration } };
