/**
 * Jobs found suspended by someone other than the operator (a queue controller holding them), with
 * the resourceVersion of the live read that found it.
 *
 * Whether the operator may resume a suspended Job is written in the Job's managedFields, which the
 * caches drop (runtime/cache/transforms.ts), so the Job drift policy reads the live Job. While a queue
 * holds a Job, every reconcile of its MiniCluster would read it again; until the Job changes (a new
 * resourceVersion) the answer of the last read stands, so it is kept here. Only what a read of the
 * Job returned is kept, and only to skip the same read: nothing else is decided from it.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";

export class HeldSuspensions {
  /** By `namespace/name` of the Job (the MiniCluster's key: the Job takes its name). */
  readonly #held = new Map<string, { uid?: string; resourceVersion?: string }>();

  /** `job` is this very version of a Job a live read found held by someone else. */
  holds(job: Job): boolean {
    const held = this.#held.get(keyOf(job));
    return held !== undefined && held.uid === job.metadata?.uid &&
      held.resourceVersion === job.metadata?.resourceVersion;
  }

  /** A live read found `job` suspended by someone else (or, with `false`, not). */
  note(job: Job, held: boolean): void {
    if (!held) {
      this.#held.delete(keyOf(job));
      return;
    }
    const { uid, resourceVersion } = job.metadata ?? {};
    this.#held.set(keyOf(job), { uid, resourceVersion });
  }

  /** The MiniCluster `key` (`namespace/name`) is gone. */
  forget(key: string): void {
    this.#held.delete(key);
  }
}

const keyOf = (job: Job) => `${job.metadata?.namespace ?? ""}/${job.metadata?.name ?? ""}`;
