/**
 * The finalizer: an Apply/Cleanup split in the manner of kube-rs' `finalizer` helper.
 *
 * - A live MiniCluster without our finalizer gets it first (before any child exists, so no child
 *   can outlive a MiniCluster whose deletion skipped cleanup), then `apply` runs.
 * - A MiniCluster being deleted that still has our finalizer runs `cleanup`; when cleanup says it is
 *   done, the finalizer is removed and the API server finishes the deletion.
 * - A MiniCluster being deleted without our finalizer is none of our business any more.
 *
 * Finalizer edits are merge patches carrying the resourceVersion they were computed from, so they
 * fail with a Conflict (and are retried on a fresh view) instead of dropping a finalizer another
 * controller added meanwhile.
 */
import type { KubeClient } from "../../runtime/client.ts";
import { Action } from "../../runtime/controller.ts";
import { isNotFound } from "../../runtime/errors.ts";
import { MiniClusters } from "../../runtime/resources.ts";
import { FIELD_MANAGER, FINALIZER } from "./children/names.ts";
import type { MiniCluster } from "../../api/mod.ts";

/** The two halves of a reconcile. */
export interface FinalizerHandlers {
  /** Reconcile a live MiniCluster (its finalizer is in place). */
  apply(mc: MiniCluster): Promise<Action>;
  /**
   * Clean up a MiniCluster being deleted: `done` when the finalizer may go, else the Action that
   * brings us back (a requeue while waiting; never block inside a reconcile).
   */
  cleanup(mc: MiniCluster): Promise<{ done: true } | { done: false; action: Action }>;
}

export function hasFinalizer(mc: MiniCluster): boolean {
  return mc.metadata?.finalizers?.includes(FINALIZER) ?? false;
}

/** Runs `apply` or `cleanup` as described above. `onPatched` sees every MiniCluster we patched. */
export async function finalizer(
  client: KubeClient,
  mc: MiniCluster,
  handlers: FinalizerHandlers,
  onPatched: (patched: MiniCluster) => void = () => {},
): Promise<Action> {
  const deleting = Boolean(mc.metadata?.deletionTimestamp);
  if (deleting) {
    if (!hasFinalizer(mc)) return Action.awaitChange();
    const result = await handlers.cleanup(mc);
    if (!result.done) return result.action;
    const patched = await patchFinalizers(
      client,
      mc,
      (mc.metadata?.finalizers ?? []).filter((f) => f !== FINALIZER),
    );
    if (patched) onPatched(patched);
    return Action.awaitChange();
  }
  if (!hasFinalizer(mc)) {
    const patched = await patchFinalizers(client, mc, [
      ...(mc.metadata?.finalizers ?? []),
      FINALIZER,
    ]);
    if (!patched) return Action.awaitChange(); // deleted meanwhile
    onPatched(patched);
    mc = patched;
  }
  return handlers.apply(mc);
}

/**
 * Sets metadata.finalizers, guarded by the resourceVersion it was computed from. Undefined when the
 * MiniCluster (or its CRD) is already gone, which for a removal is success.
 */
async function patchFinalizers(
  client: KubeClient,
  mc: MiniCluster,
  finalizers: string[],
): Promise<MiniCluster | undefined> {
  const metadata = mc.metadata ?? {};
  try {
    return await client.patch<MiniCluster>(
      MiniClusters,
      metadata.namespace!,
      metadata.name!,
      { metadata: { finalizers, resourceVersion: metadata.resourceVersion } },
      "merge",
      { fieldManager: FIELD_MANAGER },
    );
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
