/**
 * The gang's PodGroup (children/gang.ts), written by the reconciler before the Job whose pods name
 * it: a PodGroup created after the Job would leave the first pods to the scheduler one by one.
 *
 * It is not a watched dependent: `scheduling.k8s.io/v1beta1` is served only where gang scheduling
 * is on, and a watch of a resource the API server lacks would fail on every other cluster. So it is
 * read from the API on each reconcile of a ganged MiniCluster (which also brings its
 * `PodGroupInitiallyScheduled` condition, the scheduler's word on the gang, for the status) and
 * applied only when it is missing or its minCount differs: an unchanged MiniCluster writes nothing.
 */
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { ApiClient } from "../../runtime/api_client.ts";
import type { Problem } from "../../runtime/dependents.ts";
import { ApiError, errorMessage, isNotFound, isRetryable } from "../../runtime/errors.ts";
import type { FreshnessFence } from "../../runtime/freshness_fence.ts";
import { resourceType } from "../../runtime/resources.ts";
import { controllerOf } from "../../runtime/store.ts";
import { type PodGroup, podGroupMinCount } from "./children/gang.ts";
import { FIELD_MANAGER } from "./children/names.ts";

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

function stateOf(group: PodGroup): PodGroupState {
  const condition = group.status?.conditions?.find((c) => c.type === INITIALLY_SCHEDULED);
  return {
    name: group.metadata?.name ?? "",
    ...(podGroupMinCount(group) !== undefined ? { minCount: podGroupMinCount(group) } : {}),
    ...(condition ? { condition } : {}),
  };
}

/**
 * Reads the PodGroup `name`; undefined when there is none. Transient failures are thrown, any
 * other refusal is a problem.
 */
export async function readPodGroup(
  client: ApiClient,
  namespace: string | undefined,
  name: string,
): Promise<PodGroupState | { problem: Problem } | undefined> {
  try {
    return stateOf(await client.get<PodGroup>(PodGroups, namespace, name));
  } catch (e) {
    if (isNotFound(e)) return undefined;
    return refused(e, name);
  }
}

/**
 * The desired PodGroup, applied (after the fence) when missing or when its minCount differs; its
 * state, or why it cannot be written. A PodGroup of that name the MiniCluster does not control is
 * never taken over.
 */
export async function ensurePodGroup(
  client: ApiClient,
  desired: PodGroup,
  fence: FreshnessFence,
): Promise<PodGroupState | { problem: Problem }> {
  const { namespace, name } = desired.metadata ?? {};
  let live: PodGroup | undefined;
  try {
    live = await client.get<PodGroup>(PodGroups, namespace, name!);
  } catch (e) {
    if (!isNotFound(e)) return refused(e, name!);
  }
  if (live) {
    const owner = desired.metadata?.ownerReferences?.[0]?.uid;
    if (controllerOf(live)?.uid !== owner) {
      const message = `PodGroup ${name} exists and belongs to someone else; not taken over`;
      return { problem: { reason: "NameTaken", message } };
    }
    if (podGroupMinCount(live) === podGroupMinCount(desired)) return stateOf(live);
  }
  await fence.check();
  try {
    const applied = await client.apply<PodGroup>(PodGroups, desired, {
      fieldManager: FIELD_MANAGER,
      force: true,
    });
    return stateOf(applied);
  } catch (e) {
    return refused(e, name!);
  }
}

function refused(e: unknown, name: string): { problem: Problem } {
  if (!(e instanceof ApiError) || isRetryable(e)) throw e;
  return { problem: { reason: "ApiError", message: `PodGroup ${name}: ${errorMessage(e)}` } };
}
