/**
 * Dependent resources, in the manner of the Java Operator SDK's (a desired object, a matcher and a
 * policy for create and update) but our own: one loop for every kind of object a primary owns.
 *
 * For each dependent, in waves (the dependents of a wave concurrently, the waves in order):
 *
 * 1. observe it in its store (the cache, with this process's recent writes folded in);
 * 2. refuse an object of that name that the primary does not control (`NameTaken`, looked at again
 *    every `NAME_TAKEN_RECHECK_MS`: someone else's object may go without an event we would see);
 * 3. stop when it matches the desired object (a create-once dependent always does);
 * 4. pass the freshness fence before the first write of the reconcile;
 * 5. create a missing one create-only: a server-side apply carrying a resourceVersion no object can
 *    have, so that it fails with a Conflict instead of taking over an object the label-selected
 *    cache cannot see; on that Conflict the object is read and checked as in 2 and 3 (a create-once
 *    one of ours gets the labels the cache selects on);
 * 6. otherwise let the kind's drift policy bring it in line (apply, recreate, patch what may change
 *    and report the rest).
 *
 * A dependent that later waves need (`needed`) and that its wave leaves missing stops the plan
 * there. Then `prune` deletes what the primary controls in the given stores and no dependent names.
 * A write the API refuses for good becomes a `Problem` of that dependent (the others still go
 * ahead). A transient failure (throttling, a server error such as etcd's "request is too large",
 * which may well never pass, a ResourceQuota without room) is a problem too, and the outcome
 * carries the error (`retry`): the plan stops after that wave, so that the owner can report the
 * problem before the error is thrown for the controller to retry with backoff. Deletes carry the
 * uid precondition of the object observed, so they never hit a newer object of the same name.
 */
import type { ApiClient } from "../client/api_client.ts";
import {
  ApiError,
  errorMessage,
  isAlreadyExists,
  isConflict,
  isNotFound,
  isQuotaExceeded,
  isRetryable,
} from "../client/errors.ts";
import type { FreshnessFence } from "./freshness_fence.ts";
import { getOrUndefined } from "../client/get_or_undefined.ts";
import type { ResourceType } from "../client/resources.ts";
import { controllerOf, type KubeObject, type Store } from "../cache/store.ts";

/** Something of the desired state that could not be written, for a condition. */
export interface Problem {
  reason: string;
  message: string;
}

/** How often a dependent whose name someone else holds is looked at again. */
export const NAME_TAKEN_RECHECK_MS = 10_000;

/** Retry soon after deleting a dependent that must be re-created (immutable fields). */
export const RECREATE_REQUEUE_MS = 1_000;

/**
 * A resourceVersion no object in a namespace can have (etcd's first revision predates every
 * namespace): an apply carrying it creates the object when the name is free and fails with a
 * Conflict when anything holds the name.
 */
export const CREATE_ONLY_RESOURCE_VERSION = "1";

export interface DependentResult<C extends KubeObject = KubeObject> {
  /** The object as it stands after this reconcile (undefined when none is ours). */
  object?: C;
  /** This reconcile created it. */
  created?: boolean;
  problem?: Problem;
  /** Look again after this long (a re-create under way, a name someone else holds). */
  requeueAfterMs?: number;
  /** The object of someone else that holds the name (with a `NameTaken` problem). */
  taken?: KubeObject;
  /** The transient error of a write that failed (with its problem), to be retried. */
  retry?: unknown;
}

/** The writes a drift policy may make, bound to its dependent. */
export interface DependentWrites<C extends KubeObject> {
  /** Server-side apply of `desired` (forced: the operator owns the fields it sets). */
  apply(desired: C): Promise<DependentResult<C>>;
  /** Merge patch of the observed object. */
  patch(observed: C, patch: unknown): Promise<DependentResult<C>>;
  /** Deletes the observed object; the next reconcile (soon) creates it anew. */
  recreate(observed: C): Promise<DependentResult<C>>;
}

/**
 * What happens to a dependent that exists: `"createOnce"` never updates it (values decided once,
 * such as a generated key); otherwise `matches` says whether it needs a write and `update` makes it.
 */
export type DriftPolicy<C extends KubeObject> = "createOnce" | {
  matches(observed: C, desired: C): boolean;
  update(observed: C, desired: C, writes: DependentWrites<C>): Promise<DependentResult<C>>;
};

export interface Dependent<C extends KubeObject = KubeObject> {
  resource: ResourceType;
  /** Where it is observed. */
  store: Store<C>;
  namespace: string | undefined;
  name: string;
  /** The desired object, built when first needed (a create-once one only to create it). */
  desired(): C | Promise<C>;
  drift: DriftPolicy<C>;
  /**
   * Later waves need it (what pods mount): while its wave leaves it without an object of the
   * owner's, the plan stops there (`heldBack`) and its problem says why.
   */
  needed?: boolean;
}

/** A dependent whose desired object is at hand (its name and namespace are the object's). */
export function dependent<C extends KubeObject>(
  resource: ResourceType,
  store: Store<C>,
  desired: C,
  drift: DriftPolicy<C>,
): Dependent<C> {
  const { namespace, name } = desired.metadata ?? {};
  return { resource, store, namespace, name: name!, desired: () => desired, drift };
}

/** A drift policy that applies the desired object whenever `matches` says it differs. */
export function applyWhenDifferent<C extends KubeObject>(
  matches: (observed: C, desired: C) => boolean,
): DriftPolicy<C> {
  return { matches, update: (_observed, desired, writes) => writes.apply(desired) };
}

/** Every dependent of an owner, in the waves they are written in, and where pruning looks. */
export interface DependentPlan {
  waves: readonly (readonly Dependent[])[];
  /** Stores whose objects the owner controls are deleted when no dependent names them. */
  pruned?: readonly { resource: ResourceType; store: Store<KubeObject> }[];
  /**
   * Asked before every wave after the first: false stops the plan there (no later wave, no
   * pruning), when what the earlier waves found contradicts what the later ones were built from.
   */
  proceed?(outcome: DependentsOutcome): boolean;
}

/** Every dependent's result, the problems among them, and the soonest requeue any asked for. */
export interface DependentsOutcome {
  results: Map<Dependent, DependentResult>;
  problems: Problem[];
  requeueAfterMs?: number;
  /** The plan's `proceed` stopped it before its last wave. */
  stopped?: boolean;
  /** A `needed` dependent is missing: the later waves were not written. */
  heldBack?: boolean;
  /**
   * A write failed for a reason retrying may fix (the first such error; its problem is among
   * `problems`): the plan stopped after that wave. The owner reports it, then throws it.
   */
  retry?: unknown;
}

export class DependentResources {
  constructor(readonly client: ApiClient, readonly fieldManager: string) {}

  /**
   * Reconciles the waves in order, the dependents of each wave concurrently (while the plan says to
   * proceed), then prunes what the owner controls in the plan's pruned stores and no dependent
   * names.
   */
  async reconcile(
    owner: KubeObject,
    plan: DependentPlan,
    fence: FreshnessFence,
  ): Promise<DependentsOutcome> {
    const outcome: DependentsOutcome = { results: new Map(), problems: [] };
    for (const [i, wave] of plan.waves.entries()) {
      if (i > 0 && plan.proceed && !plan.proceed(outcome)) return { ...outcome, stopped: true };
      const results = await Promise.all(
        wave.map((d) => this.#retrying(d, this.ensure(owner, d, fence))),
      );
      wave.forEach((d, j) => note(outcome, d, results[j]));
      if (outcome.retry !== undefined) return outcome;
      const missing = wave.some((d, j) => d.needed && !results[j].object);
      if (missing && i < plan.waves.length - 1) return { ...outcome, heldBack: true };
    }
    const wanted = plan.waves.flat();
    try {
      outcome.problems.push(...await this.prune(owner, plan.pruned ?? [], wanted, fence));
    } catch (e) {
      if (!transient(e)) throw e;
      outcome.problems.push(transientProblem(e, "pruning"));
      outcome.retry = e;
    }
    return outcome;
  }

  /** A transient failure of one dependent as its result (the others of the wave still go). */
  async #retrying(dep: Dependent, result: Promise<DependentResult>): Promise<DependentResult> {
    try {
      return await result;
    } catch (e) {
      if (!transient(e)) throw e;
      return { problem: transientProblem(e, `${dep.resource.kind} ${dep.name}`), retry: e };
    }
  }

  /** Steps 1 to 6 above for one dependent. */
  async ensure<C extends KubeObject>(
    owner: KubeObject,
    dep: Dependent<C>,
    fence: FreshnessFence,
  ): Promise<DependentResult<C>> {
    let built: Promise<C> | undefined;
    const desired = () => built ??= Promise.resolve(dep.desired());
    const upToDate = async (observed: C) =>
      dep.drift === "createOnce" || dep.drift.matches(observed, await desired());
    const what = `${dep.resource.kind} ${dep.name}`;
    try {
      let observed: C | undefined = dep.store.get(dep.namespace, dep.name);
      if (observed && !ownedBy(observed, owner)) return nameTaken(what, owner, observed);
      if (observed && await upToDate(observed)) return { object: observed };
      await fence.check();
      if (!observed) {
        const created = await this.#createOnly(dep, await desired());
        if ("created" in created) return { object: created.created, created: true };
        observed = created.held;
        if (!ownedBy(observed, owner)) return nameTaken(what, owner, observed);
        if (dep.drift === "createOnce") return await this.#relabel(dep, observed, await desired());
        if (await upToDate(observed)) return { object: observed };
      }
      if (dep.drift === "createOnce") return { object: observed };
      return await dep.drift.update(observed, await desired(), this.#writes(dep));
    } catch (e) {
      return { problem: problemOf(e, what) };
    }
  }

  /**
   * Deletes what `owner` controls in `stores` that no dependent of `wanted` names (and that is not
   * being deleted already).
   */
  async prune(
    owner: KubeObject,
    stores: readonly { resource: ResourceType; store: Store<KubeObject> }[],
    wanted: Iterable<Dependent>,
    fence: FreshnessFence,
  ): Promise<Problem[]> {
    const uid = owner.metadata?.uid;
    if (!uid) return [];
    const keep = new Set<string>();
    for (const d of wanted) keep.add(`${d.resource.kind}/${d.name}`);
    const problems: Problem[] = [];
    for (const { resource, store } of stores) {
      for (const obj of store.byIndex("owner", uid)) {
        const name = obj.metadata?.name;
        if (keep.has(`${resource.kind}/${name}`) || obj.metadata?.deletionTimestamp) continue;
        try {
          await fence.check();
          await deleteObserved(this.client, resource, obj);
        } catch (e) {
          problems.push(problemOf(e, `${resource.kind} ${name}`));
        }
      }
    }
    return problems;
  }

  /**
   * Creates `desired` if its name is free, in one request. Otherwise `held` is the object that
   * holds the name, read from the API server; gone again meanwhile, the Conflict is thrown (and
   * retried with backoff).
   */
  async #createOnly<C extends KubeObject>(
    dep: Dependent<C>,
    desired: C,
  ): Promise<{ created: C } | { held: C }> {
    try {
      const created = await this.client.apply<C>(dep.resource, {
        ...desired,
        metadata: { ...desired.metadata, resourceVersion: CREATE_ONLY_RESOURCE_VERSION },
      }, { fieldManager: this.fieldManager, force: true });
      return { created };
    } catch (e) {
      if (!isConflict(e) && !isAlreadyExists(e)) throw e;
      const held = await getOrUndefined<C>(this.client, dep.resource, dep.namespace, dep.name);
      if (!held) throw e;
      return { held };
    }
  }

  /**
   * A create-once object of ours that the cache cannot see (made without the labels its watch
   * selects on, say by an older version) keeps its content but gets the desired labels, once, so
   * that later reconciles find it in the cache instead of asking the API server again.
   */
  async #relabel<C extends KubeObject>(
    dep: Dependent<C>,
    observed: C,
    desired: C,
  ): Promise<DependentResult<C>> {
    const labels = desired.metadata?.labels ?? {};
    const have = observed.metadata?.labels ?? {};
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return { object: observed };
    const { apiVersion, kind } = desired;
    const object = await this.client.apply<C>(dep.resource, {
      apiVersion,
      kind,
      metadata: { name: dep.name, namespace: dep.namespace, labels },
    } as C, { fieldManager: this.fieldManager, force: true });
    return { object };
  }

  #writes<C extends KubeObject>(dep: Dependent<C>): DependentWrites<C> {
    const opts = { fieldManager: this.fieldManager };
    return {
      apply: async (desired) => ({
        object: await this.client.apply<C>(dep.resource, desired, { ...opts, force: true }),
      }),
      patch: async (_observed, patch) => ({
        object: await this.client.patch<C>(
          dep.resource,
          dep.namespace,
          dep.name,
          patch,
          "merge",
          opts,
        ),
      }),
      recreate: async (observed) => {
        await deleteObserved(this.client, dep.resource, observed);
        return { requeueAfterMs: RECREATE_REQUEUE_MS };
      },
    };
  }
}

/**
 * Deletes an object we observed, guarded by its uid (never a newer object of the same name); gone
 * already, or replaced meanwhile (the uid precondition failed), is fine.
 */
export async function deleteObserved(
  client: ApiClient,
  resource: ResourceType,
  obj: KubeObject,
  opts: { propagationPolicy?: "Foreground" | "Background"; gracePeriodSeconds?: number } = {},
): Promise<void> {
  const { namespace, name, uid } = obj.metadata ?? {};
  try {
    await client.delete(resource, namespace, name!, {
      ...opts,
      ...(uid ? { preconditions: { uid } } : {}),
    });
  } catch (e) {
    if (!isNotFound(e) && !isConflict(e)) throw e;
  }
}

/**
 * Deletes an object only while it is still the version observed (uid and resourceVersion
 * preconditions), for a deletion decided from that version's spec: a change made since (a view
 * behind the live object) answers 409 and deletes nothing. Says which of the three happened.
 */
export async function deleteUnchanged(
  client: ApiClient,
  resource: ResourceType,
  obj: KubeObject,
  opts: { propagationPolicy?: "Foreground" | "Background" } = {},
): Promise<"deleted" | "changed" | "gone"> {
  const { namespace, name, uid, resourceVersion } = obj.metadata ?? {};
  try {
    await client.delete(resource, namespace, name!, {
      ...opts,
      preconditions: { uid, resourceVersion },
    });
    return "deleted";
  } catch (e) {
    if (isNotFound(e)) return "gone";
    if (isConflict(e)) return "changed";
    throw e;
  }
}

/** True when `owner` is the controller of `obj`. */
function ownedBy(obj: KubeObject, owner: KubeObject): boolean {
  return controllerOf(obj)?.uid === owner.metadata?.uid;
}

function nameTaken(what: string, owner: KubeObject, taken: KubeObject): DependentResult<never> {
  const message = `${what} exists and is not owned by this ${owner.kind ?? "object"}`;
  return {
    problem: { reason: "NameTaken", message },
    requeueAfterMs: NAME_TAKEN_RECHECK_MS,
    taken,
  };
}

/**
 * A write the API refuses for good becomes a problem with the API's own message; anything else
 * (transient API errors, conflicts, a stale view, a bug) is thrown.
 */
function problemOf(e: unknown, what: string): Problem {
  if (!(e instanceof ApiError) || transient(e) || isConflict(e)) throw e;
  return { reason: "ApiError", message: `${what}: ${errorMessage(e)}` };
}

/** Whether this reconcile created a dependent of `resource`. */
export function created(outcome: DependentsOutcome, resource: ResourceType): boolean {
  for (const [dep, result] of outcome.results) {
    if (dep.resource === resource && result.created) return true;
  }
  return false;
}

/**
 * Errors the controller retries (conflicts are not reported: they are races, not problems). A
 * quota's refusal is one: nothing we watch says when the quota has room again.
 */
function transient(e: unknown): e is ApiError {
  return e instanceof ApiError && (isRetryable(e) || isQuotaExceeded(e)) && !isConflict(e);
}

function transientProblem(e: ApiError, what: string): Problem {
  return {
    reason: isQuotaExceeded(e) ? "QuotaExceeded" : "WriteFailing",
    message: `${what}: ${errorMessage(e)} (retrying with backoff)`,
  };
}

function note(outcome: DependentsOutcome, dep: Dependent, result: DependentResult): void {
  outcome.results.set(dep, result);
  if (result.problem) outcome.problems.push(result.problem);
  if (result.retry !== undefined) outcome.retry ??= result.retry;
  if (result.requeueAfterMs !== undefined) {
    outcome.requeueAfterMs = Math.min(outcome.requeueAfterMs ?? Infinity, result.requeueAfterMs);
  }
}
