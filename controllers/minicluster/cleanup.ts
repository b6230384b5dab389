/**
 * Cleanup of a MiniCluster being deleted (the finalizer's second half): the Job goes with
 * background propagation (its name is free at once), its pods are deleted, and the cleanup waits (requeueing, never blocking)
 * until the pods are gone — at most `cleanupTimeoutMs`, after which it reports `CleanupTimedOut` and
 * lets deletion go on. Then every other child is deleted: ownership would remove them after the
 * MiniCluster goes, but only where a garbage collector runs, and only after the MiniCluster is gone.
 */
import type { MiniCluster } from "../../api/mod.ts";
import type { ApiClient } from "../../runtime/api_client.ts";
import { Action } from "../../runtime/controller.ts";
import { deleteObserved } from "../../runtime/dependents.ts";
import { Jobs, Pods } from "../../runtime/resources.ts";
import { controllerOf, type KubeObject, type Store } from "../../runtime/store.ts";
import type { RuntimeLog } from "../../runtime/log.ts";
import { jobName } from "./children/names.ts";
import type { EventRecorder } from "./events.ts";
import { type MiniClusterStores, podsOf, watched } from "./stores.ts";

export type CleanupResult = { done: true } | { done: false; action: Action };

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
    const job = this.stores.jobs.get(mc.metadata?.namespace, jobName(mc));
    if (job && controllerOf(job)?.uid === uid && !job.metadata?.deletionTimestamp) {
      // Background: the Job goes at once (the Job controller starts nothing more for it) and the
      // garbage collector deletes its pods, which this cleanup waits for below. Foreground would
      // leave the Job, with the name, in place until the collector got round to it (never, where
      // none runs), and a MiniCluster created again under the same name would find its Job's name
      // held by its predecessor.
      await deleteObserved(this.client, Jobs, job, { propagationPolicy: "Background" });
    }
    for (const pod of this.stores.pods.byIndex("owner", uid)) {
      if (!pod.metadata?.deletionTimestamp) await deleteObserved(this.client, Pods, pod);
    }
    const remaining = podsOf(this.stores, mc).length +
      this.stores.pods.byIndex("owner", uid).length;
    const since = Date.parse(mc.metadata?.deletionTimestamp ?? "") || this.now().getTime();
    const waited = this.now().getTime() - since;
    const { timeoutMs, pollMs } = this.timing;
    if (remaining > 0 && waited < timeoutMs) {
      const poll = Math.min(pollMs, Math.max(1, timeoutMs - waited));
      return { done: false, action: Action.requeueAfter(poll) };
    }
    if (remaining > 0) {
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
    for (const key of ["workspaces", "configMaps", "secrets", "services"] as const) {
      const { rt } = watched(key);
      for (const obj of (this.stores[key] as Store<KubeObject>).byIndex("owner", uid)) {
        if (!obj.metadata?.deletionTimestamp) await deleteObserved(this.client, rt, obj);
      }
    }
    await this.recorder.emit(mc, {
      type: "Normal",
      reason: "CleanedUp",
      message: "deleted the Job, its pods and every child of the MiniCluster",
    });
    return { done: true };
  }
}
