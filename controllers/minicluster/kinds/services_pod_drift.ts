/**
 * When the services pod differs from the desired one.
 *
 * A Pod's spec is immutable, and other parties legitimately change it after we create it: admission
 * (`AlwaysPullImages` rewrites every `imagePullPolicy`, a mutating webhook adds a sidecar, a label
 * or a volume), defaulting, another controller, a person editing a label. Re-creating the pod
 * whenever the observed spec differs from ours fights all of them, forever: admission makes the
 * same change to every new pod. So the operator compares only what it decides:
 *
 * - the spec through the desired-hash annotation (diff.ts) it stamps on the pod it creates: the
 *   same hash means the pod was created from this very desired spec, and whatever differs in its
 *   spec since came from someone else and is left alone;
 * - the labels and annotations it sets, which a Pod accepts changes to: they are patched back
 *   (never by re-creating the pod). A mutating webhook or controller that rewrites one after each
 *   patch would make that one patch per reconcile forever, so the patches draw on the same kind
 *   of budget as re-creations (their own entry): the first at once, another within 10 s of the
 *   last waits, doubling up to 5 min. A change that comes back within a backoff step, or within
 *   a minute of its end, is someone fighting the patch: the condition `LabelsOverridden` names
 *   what keeps changing (with an Event when it appears and one when it clears). A person who
 *   edits a label now and then gets it patched back at once and no condition.
 *
 * Only a desired spec that changed (another hash whose spec the pod does not hold) re-creates the
 * pod. That is announced by an Event, and bounded: a pod re-created again soon after waits, longer
 * each time (`RecreateBudget`), and the wait is a condition (`RecreateBackoff`) naming the fields.
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../../../api/mod.ts";
import type {
  DependentResult,
  DependentWrites,
  DriftPolicy,
  Problem,
} from "../../../runtime/controller/dependents.ts";
import { DESIRED_HASH_ANNOTATION, differingPaths } from "./diff.ts";
import type { EventRecorder } from "../status/events.ts";
import type { Matcher } from "./stores.ts";

/** Paths named in a message at most (the rest counted). */
const MAX_PATHS = 5;
/** A label changed again this soon after its restore was allowed again is still being fought. */
const OVERRIDE_WINDOW_MS = 60_000;

/**
 * How often one pod may be re-created: the first time at once, then after `baseMs`, doubling up to
 * `maxMs`; a pod left alone for `resetMs` starts over. Kept by the reconciler across reconciles.
 */
export class RecreateBudget {
  readonly #recent = new Map<string, { count: number; last: number }>();

  constructor(
    readonly now: () => number,
    readonly baseMs = 10_000,
    readonly maxMs = 300_000,
    readonly resetMs = 600_000,
  ) {}

  /** How long `key` must wait before its next re-creation (0: now). */
  wait(key: string): number {
    const since = this.sinceAllowed(key);
    return since === undefined ? 0 : Math.max(0, -since);
  }

  /**
   * How long ago `key`'s next re-creation became allowed (negative: it must still wait), or
   * undefined when there was none recently.
   */
  sinceAllowed(key: string): number | undefined {
    const r = this.#live(key);
    if (!r) return undefined;
    const delay = Math.min(this.baseMs * 2 ** (r.count - 1), this.maxMs);
    return this.now() - (r.last + delay);
  }

  /** How many re-creations of `key` in a row were recorded (0: none recently). */
  count(key: string): number {
    return this.#live(key)?.count ?? 0;
  }

  /** Records a re-creation of `key`; returns how many in a row (this one included). */
  record(key: string): number {
    // Pods of deleted MiniClusters are never asked about again: forget the quiet ones now and then.
    if (this.#recent.size >= 1_000) { for (const k of [...this.#recent.keys()]) this.#live(k); }
    const count = (this.#live(key)?.count ?? 0) + 1;
    this.#recent.set(key, { count, last: this.now() });
    return count;
  }

  #live(key: string) {
    const r = this.#recent.get(key);
    if (r && this.now() - r.last > this.resetMs) {
      this.#recent.delete(key);
      return undefined;
    }
    return r;
  }
}

const hashOf = (p: Pod) => p.metadata?.annotations?.[DESIRED_HASH_ANNOTATION];

/** The operator's labels and annotations that the observed pod does not hold. */
function metadataPaths(observed: Pod, desired: Pod): string[] {
  return differingPaths(
    { labels: observed.metadata?.labels, annotations: observed.metadata?.annotations },
    { labels: desired.metadata?.labels, annotations: desired.metadata?.annotations },
  );
}

/**
 * The services pod needs no write: created from this desired spec (the same hash), and holding the
 * operator's labels and annotations (see above). The Pod row's matcher (child_kinds.ts).
 */
export function servicesPodMatches(observed: Pod, desired: Pod): boolean {
  return hashOf(observed) === hashOf(desired) && metadataPaths(observed, desired).length === 0;
}

/** The drift policy of the services pod (see above); `matches` is its kind's matcher. */
export function servicesPodDrift(
  mc: MiniCluster,
  recorder: EventRecorder,
  budget: RecreateBudget,
  matches: Matcher,
): DriftPolicy<Pod> {
  return {
    matches,
    async update(observed, desired, writes): Promise<DependentResult<Pod>> {
      const specPaths = hashOf(observed) === hashOf(desired)
        ? []
        : differingPaths(observed.spec, desired.spec).map((p) => `spec.${p}`);
      const name = observed.metadata?.name;
      const key = `${observed.metadata?.namespace}/${name}/${mc.metadata?.uid}`;
      if (specPaths.length === 0) {
        return await restoreMetadata(observed, desired, writes, budget, key);
      }
      const fields = listed(specPaths);
      const wait = budget.wait(key);
      if (wait > 0) {
        return {
          object: observed,
          requeueAfterMs: wait,
          problem: {
            reason: "RecreateBackoff",
            message: `the services pod ${name} differs from the spec (${fields}) and was ` +
              `re-created recently; it is re-created again in ${Math.ceil(wait / 1000)} s`,
          },
        };
      }
      const count = budget.record(key);
      await recorder.emit(mc, {
        type: "Normal",
        reason: "ServicesPodRecreated",
        message: `re-creating the services pod ${name}: the spec changed (${fields})` +
          (count > 1 ? `; ${count} times in a row` : ""),
      });
      return await writes.recreate(observed);
    },
  };
}

/**
 * Patches the operator's labels and annotations back, within the budget (see above). While the
 * fight goes on the problem stays reported, on the patches too (with a look once the next restore
 * is allowed), so the condition holds until a reconcile finds the metadata holding.
 */
async function restoreMetadata(
  observed: Pod,
  desired: Pod,
  writes: DependentWrites<Pod>,
  budget: RecreateBudget,
  podKey: string,
): Promise<DependentResult<Pod>> {
  const key = `${podKey}#metadata`;
  const name = observed.metadata?.name;
  const keys = listed(
    metadataPaths(observed, desired).map((p) =>
      p.replace(/^labels\./, "label ").replace(/^annotations\./, "annotation ")
    ),
  );
  // A message that stays the same within a backoff step: each reconcile would write it otherwise.
  const overridden = (): Problem => {
    const next = new Date(budget.now() + budget.wait(key)).toISOString();
    return {
      reason: "LabelsOverridden",
      message: `the services pod ${name} keeps losing what the operator sets on it (${keys}): ` +
        "someone else (a mutating webhook or another controller) changes it again after each " +
        `restore; restored ${budget.count(key)} times in a row, the next not before ${next}`,
    };
  };
  const since = budget.sinceAllowed(key);
  if (since !== undefined && since < 0) {
    return { object: observed, requeueAfterMs: -since, problem: overridden() };
  }
  const fought = since !== undefined && since <= OVERRIDE_WINDOW_MS;
  budget.record(key);
  const { labels, annotations } = desired.metadata ?? {};
  const patched = await writes.patch(observed, { metadata: { labels, annotations } });
  if (!fought || patched.problem) return patched;
  return { ...patched, requeueAfterMs: budget.wait(key), problem: overridden() };
}

function listed(paths: string[]): string {
  const shown = paths.slice(0, MAX_PATHS).join(", ");
  return paths.length > MAX_PATHS ? `${shown} and ${paths.length - MAX_PATHS} more` : shown;
}
