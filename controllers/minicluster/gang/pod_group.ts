/**
 * The gang's PodGroup (children/gang.ts) as the status sees it. It is a child like the others (its
 * row in child_kinds.ts: watched where the API server serves it, written in the wave before the
 * Job whose pods name it, rechecked when someone else holds its name, deleted on cleanup); this
 * module names its resource and reads the scheduler's word on the gang, the PodGroup's
 * `PodGroupInitiallyScheduled` condition, for the GangScheduling condition (gang_condition.ts).
 */
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import { resourceType } from "../../../runtime/client/resources.ts";
import { controllerOf } from "../../../runtime/cache/store.ts";
import { type PodGroup, podGroupMinCount } from "../children/gang.ts";

export const PodGroups = resourceType(
  "scheduling.k8s.io",
  "v1beta1",
  "podgroups",
  "PodGroup",
  true,
);

/** The scheduler's condition on a PodGroup: True once the gang was placed. */
export const INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled";

/** What the status reports of the PodGroup. */
export interface PodGroupState {
  name: string;
  minCount?: number;
  /** Its PodGroupInitiallyScheduled condition, once the scheduler tried. */
  condition?: Condition;
}

/** The state of `group` when the MiniCluster `ownerUid` controls it (someone else's says nothing). */
export function podGroupState(
  group: PodGroup | undefined,
  ownerUid: string | undefined,
): PodGroupState | undefined {
  if (!group || controllerOf(group)?.uid !== ownerUid) return undefined;
  const condition = group.status?.conditions?.find((c) => c.type === INITIALLY_SCHEDULED);
  return {
    name: group.metadata?.name ?? "",
    ...(podGroupMinCount(group) !== undefined ? { minCount: podGroupMinCount(group) } : {}),
    ...(condition ? { condition } : {}),
  };
}
