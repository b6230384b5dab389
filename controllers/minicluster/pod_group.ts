/**
 * The PodGroup kube-scheduler places a ganged Job's pods by (scheduling.k8s.io/v1beta1, made by
 * the Job controller from the Job's spec.scheduling). Its `PodGroupInitiallyScheduled` condition
 * says why none of the gang is bound; the pods name it (`spec.schedulingGroup.podGroupName`).
 */
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { ApiClient } from "../../runtime/api_client.ts";
import { isForbidden, isNotFound } from "../../runtime/errors.ts";
import { resourceType } from "../../runtime/resources.ts";

export const PodGroups = resourceType(
  "scheduling.k8s.io",
  "v1beta1",
  "podgroups",
  "PodGroup",
  true,
);

/** The scheduler's condition on a PodGroup: True once the gang was placed. */
export const INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled";

export interface PodGroupState {
  name: string;
  /** Its PodGroupInitiallyScheduled condition, once the scheduler tried. */
  condition?: Condition;
}

interface PodGroup {
  metadata?: { name?: string };
  status?: { conditions?: Condition[] };
}

/** The PodGroup a pod is scheduled with (1.37 pods, `spec.schedulingGroup`). */
export function podGroupName(pod: Pod): string | undefined {
  const spec = pod.spec as { schedulingGroup?: { podGroupName?: string } } | undefined;
  return spec?.schedulingGroup?.podGroupName;
}

/**
 * Reads the PodGroup `name`; undefined when it is gone or may not be read (the condition then says
 * what the pods say). Transient failures are thrown.
 */
export async function readPodGroup(
  client: ApiClient,
  namespace: string | undefined,
  name: string,
): Promise<PodGroupState | undefined> {
  try {
    const group = await client.get<PodGroup>(PodGroups, namespace, name);
    const condition = group.status?.conditions?.find((c) => c.type === INITIALLY_SCHEDULED);
    return { name, ...(condition ? { condition } : {}) };
  } catch (e) {
    if (isNotFound(e) || isForbidden(e)) return undefined;
    throw e;
  }
}
