/**
 * Cleanup of a MiniCluster being deleted (the finalizer's second half): the waves of the child
 * kinds (child_kinds.ts) in reverse, as the Java Operator SDK deletes dependents. Each wave's
 * objects that the MiniCluster controls are deleted (the Job in the background: its name is free
 * at once); before the wave before it goes, the pods its objects run (the Job's, the services pod)
 * must be gone, which the cleanup waits for (requeueing, never blocking) at most
 * `cleanupTimeoutMs` from the deletion, after which it reports `CleanupTimedOut` and goes on.
 * Pods whose drain grace period is longer than DELETION_GRACE_SECONDS are deleted again with it.
 * Every child is deleted here: ownership would remove them after the MiniCluster goes, but only
 * where a garbage collector runs, and only after the MiniCluster is gone.
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../../../api/mod.ts";
import { Pods } from "../../../runtime/client/resources.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import { Action } from "../../../runtime/controller/controller.ts";
import { deleteObserved } from "../../../runtime/controller/dependents.ts";
import type { KubeObject, Store } from "../../../runtime/cache/store.ts";
import type { RuntimeLog } from "../../../runtime/core/log.ts";
import { childWaves, type MiniClusterStores } from "../kinds/child_kinds.ts";
import { podsOf } from "../kinds/stores.ts";
import type { EventRecorder } from "../status/events.ts";

export type CleanupResult = { done: true } | { done: false; action: Action };

/**
 * The grace period of the Job's pods when the whole MiniCluster goes (Kubernetes' default). Pods
 * that drain (spec.flux.drainGracePeriodSeconds) could otherwise take their whole drain grace
 * period: the lead broker ends its instance at SIGTERM (scripts/wait.ts `leadStoppable`), which
 * ends the followers' drains, but a lead broker that does not (a wrapper, a hung broker) would keep
 * them waiting for their jobs.
 */
export const DELETION_GRACE_SECONDS = 30;

/**
 * The Job's pods to delete again with DELETION_GRACE_SECONDS, when the MiniCluster's drain grace
 * period is longer: those not yet deleted with it or a shorter one (deleting again with a shorter
 * grace period shortens a termination under way).
 */
export function podsToHurry(mc: MiniCluster, pods: readonly Pod[]): Pod[] {
  const grace = mc.spec?.flux?.drainGracePeriodSeconds;
  if (grace === undefined || grace <= DELETION_GRACE_SECONDS) return [];
  return pods.filter((p) =>
    (p.metadata?.deletionGracePeriodSeconds ?? Infinity) > DELETION_GRACE_SECONDS
  );
}

export class Cleanup {
  constructor(
    readonly client: ApiClient,
    readonly stores: MiniClusterStores,
    readonly recorder: EventRecorder,
    readonly now: () => Date,
    readonly timing: { timeoutMs: number; pollMs: number },
  ) {}

  async run(mc: MiniCluster, log: RuntimeLog): Promise<CleanupResult> {
    const uid = mc.metadata?.uid ?? "";
    for (const wave of childWaves().reverse()) {
      for (const { key, rt, cleanup } of wave) {
        const opts = cleanup?.propagationPolicy
          ? { propagationPolicy: cleanup.propagationPolicy }
          : undefined;
        for (const obj of (this.stores[key] as Store<KubeObject>).byIndex("owner", uid)) {
          if (!obj.metadata?.deletionTimestamp) await deleteObserved(this.client, rt, obj, opts);
        }
      }
      // The Job is gone (nothing makes its pods again): its pods go within the deletion's grace.
      if (wave.some(({ key }) => key === "jobs")) {
        for (const pod of podsToHurry(mc, podsOf(this.stores, mc))) {
          await deleteObserved(this.client, Pods, pod, {
            gracePeriodSeconds: DELETION_GRACE_SECONDS,
          });
        }
      }
      const remaining = wave.reduce(
        (n, { cleanup }) => n + (cleanup?.runs?.(this.stores, mc).length ?? 0),
        0,
      );
      if (remaining === 0) continue;
      const since = Date.parse(mc.metadata?.deletionTimestamp ?? "") || this.now().getTime();
      const waited = this.now().getTime() - since;
      const { timeoutMs, pollMs } = this.timing;
      if (waited < timeoutMs) {
        const poll = Math.min(pollMs, Math.max(1, timeoutMs - waited));
        return { done: false, action: Action.requeueAfter(poll) };
      }
      log.warn("pods of a deleted MiniCluster remain; removing the finalizer anyway", {
        pods: remaining,
      });
      await this.recorder.emit(mc, {
        type: "Warning",
        reason: "CleanupTimedOut",
        message: `${remaining} pod(s) still exist after ${
          Math.round(waited / 1000)
        }s; removing the finalizer so deletion is not blocked`,
      });
    }
    await this.recorder.emit(mc, {
      type: "Normal",
      reason: "CleanedUp",
      message: "deleted the Job, its pods and every child of the MiniCluster",
    });
    return { done: true };
  }
}
