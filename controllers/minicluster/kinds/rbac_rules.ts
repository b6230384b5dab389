/**
 * The operator's ClusterRole: exactly the verbs it uses, no wildcards, each rule with why. The
 * rights on each child kind (and on Events) are its row's `rbac` in the table of child_kinds.ts;
 * the rest are the MiniClusters' own (the primary watch, status, finalizer, deletion), Kueue's
 * Workloads and the Nodes' runtimes. hack/cluster-role.ts writes deploy/cluster-role.yaml from these (and so the chart and
 * install.yaml); the Lease of leader election has its own namespaced Role
 * (deploy/leader-election-role.yaml).
 */
import { MiniClusters } from "../../../api/resource.ts";
import { Nodes, type ResourceType } from "../../../runtime/client/resources.ts";
import { CHILD_KINDS } from "./child_kinds.ts";
import { KueueWorkloads } from "../lifecycle/queue_workload.ts";

/** A rule of the ClusterRole, and the comment above it. */
export interface RbacRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  why: string;
}

const on = (rt: ResourceType, subresource?: string) => ({
  apiGroups: [rt.group],
  resources: [subresource ? `${rt.plural}/${subresource}` : rt.plural],
});

/** Before the children: what the operator does with MiniClusters themselves. */
const MINICLUSTER_RULES: RbacRule[] = [
  {
    ...on(MiniClusters),
    verbs: ["get", "list", "watch", "patch", "delete"],
    why:
      "The primary watch (child_kinds.ts); the freshness fence reads the live MiniCluster once " +
      "before a reconcile's first write, so a stale cache never writes children " +
      "(runtime/controller/freshness_fence.ts); the finalizer is a merge patch (runtime/controller/finalizer.ts); " +
      "spec.cleanup and spec.ttlSecondsAfterFinished delete a MiniCluster whose Job finished " +
      "(finished.ts).",
  },
  {
    ...on(MiniClusters, "status"),
    verbs: ["patch"],
    why: "Status is written by server-side apply on the status subresource (status_writer.ts).",
  },
  {
    ...on(MiniClusters, "finalizers"),
    verbs: ["update"],
    why: "Children carry an ownerReference with blockOwnerDeletion: with the " +
      "OwnerReferencesPermissionEnforcement admission plugin that needs update on the finalizers " +
      "subresource of the owner.",
  },
];

/** After the children: Kueue's Workloads, which are no child of a MiniCluster. */
const WORKLOAD_RULES: RbacRule[] = [
  {
    ...on(KueueWorkloads),
    verbs: ["list", "patch"],
    why: "Kueue (queue_workload.ts): the Workload of a queued MiniCluster's Job is listed (by " +
      "Kueue's job-uid label) while the Job is suspended or the spec suspends it, for the status; " +
      "spec.suspend is carried out by a merge patch of its spec.active. Where Kueue is not " +
      "installed nothing is read.",
  },
];

/** The nodes' container runtimes, for the Flux view's mode; no child, no watch. */
const NODE_RULES: RbacRule[] = [
  {
    ...on(Nodes),
    verbs: ["list"],
    why: "viewFrom: Auto under --flux-view-mount=auto (workspace/flux_view_choice.ts): the " +
      "nodes' container runtime and kubelet versions decide whether a new Job's pods mount the " +
      "Flux view image; listed at most once a minute, only while a new Job is being built.",
  },
];

/**
 * Every rule of the ClusterRole: the MiniClusters', one per row of the table, the Workloads', the
 * Nodes'.
 */
export function clusterRoleRules(): RbacRule[] {
  return [
    ...MINICLUSTER_RULES,
    ...CHILD_KINDS.map((row) => ({ ...on(row.rt), verbs: [...row.rbac], why: row.rbacReason })),
    ...WORKLOAD_RULES,
    ...NODE_RULES,
  ];
}
