/**
 * The freshness fence: before the first write of a reconcile, one read of the live primary.
 *
 * Dependents are written from the primary's spec, and a spec from a stale view (a cache fed by a
 * lagging apiserver, an old list after a restart) would roll them back to an older generation. So
 * the first write waits for one GET of the primary and goes ahead only when the live object has the
 * uid and generation of the view; otherwise `StaleViewError` ends the reconcile, which requeues and
 * waits for the cache. A write to the primary itself (its status) can instead carry the view's
 * resourceVersion as a precondition (`confirmed`): one request instead of two, and the read only
 * when the server refuses it. A reconcile that writes nothing costs no read, and a view that is itself an
 * answer of the API in this reconcile (the finalizer helper's patch) needs none (`FreshnessFence.live`).
 */
import type { ApiClient } from "../client/api_client.ts";
import { isNotFound } from "../client/errors.ts";
import type { ResourceType } from "../client/resources.ts";
import type { KubeObject } from "../cache/store.ts";
import type { FenceResult } from "../pacing/pacing.ts";

/** The view of the primary is behind the live object: do not write from it. */
export class StaleViewError extends Error {
  override name = "StaleViewError";
}

/**
 * The fence's switch, handed to it where it is made (`--pacing-off=freshness-fence` turns it off,
 * for measuring only: a stale view is then written from), and where its reads are reported.
 */
export interface FenceSwitch {
  readonly on: boolean;
  /** Told how each read came out (the manager counts them on /metrics). */
  readonly onRead?: (result: FenceResult) => void;
}

/** The fence as it runs unless told otherwise: on, reporting nowhere. */
export const FENCE_ON: FenceSwitch = { on: true };

export class FreshnessFence {
  readonly #read?: () => Promise<void>;
  #check?: Promise<void>;
  #confirmed: boolean;

  private constructor(read?: () => Promise<void>) {
    this.#read = read;
    this.#confirmed = read === undefined;
  }

  /**
   * The view is known to be current (an API answer, or the read passed). Until then a write may
   * carry the view's resourceVersion as its precondition instead of waiting for the read: the
   * server then refuses it exactly when the view is behind, and the read is needed only then.
   */
  get confirmed(): boolean {
    return this.#confirmed;
  }

  /**
   * A fence that reads `rt`'s live `seen` object once, at the first `check()`, and reports the
   * read to `fence.onRead`; an open one when `fence` is off.
   */
  static reading(
    client: ApiClient,
    rt: ResourceType,
    seen: KubeObject,
    fence: FenceSwitch = FENCE_ON,
  ): FreshnessFence {
    if (!fence.on) return FreshnessFence.live();
    return new FreshnessFence(async () => {
      try {
        await FreshnessFence.#compare(client, rt, seen);
        fence.onRead?.("fresh");
      } catch (e) {
        fence.onRead?.(e instanceof StaleViewError ? "stale" : "error");
        throw e;
      }
    });
  }

  static async #compare(client: ApiClient, rt: ResourceType, seen: KubeObject): Promise<void> {
    const { namespace, name, uid, generation } = seen.metadata ?? {};
    let live: KubeObject;
    try {
      live = await client.get<KubeObject>(rt, namespace, name!);
    } catch (e) {
      if (isNotFound(e)) throw new StaleViewError(`${rt.kind} ${name} is gone`);
      throw e;
    }
    if (live.metadata?.uid !== uid) throw new StaleViewError(`${rt.kind} ${name} was re-created`);
    if (live.metadata?.generation !== generation) {
      throw new StaleViewError(`generation ${generation} seen, ${live.metadata?.generation} live`);
    }
  }

  /** A fence for a view that is the API's own answer in this reconcile: it never reads. */
  static live(): FreshnessFence {
    return new FreshnessFence();
  }

  /** Resolves once the view is known to be current; throws StaleViewError when it is not. */
  check(): Promise<void> {
    if (!this.#read) return Promise.resolve();
    return this.#check ??= this.#read().then(() => {
      this.#confirmed = true;
    });
  }
}
