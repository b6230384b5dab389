/**
 * One list+watch stream as a state machine, in the manner of kube-rs' watcher: what happened
 * (`StreamInput`) and the stream's state give its next state and what the watcher does next
 * (`StreamStep`). Pure: the watcher (watcher.ts) does the requests, the store and the logging, and
 * the pacing policy (watch_pacing.ts) turns a `Pause` into a wait.
 *
 * - Listed: watch from the list's resourceVersion.
 * - An event: resume from its resourceVersion (a bookmark's too), and the 410 streak ends.
 * - The watch closed (server timeout, dropped connection, apiserver restart): resume from the last
 *   resourceVersion seen; one that closed at once with nothing in it pauses first, so a server that
 *   closes every watch does not make the stream spin.
 * - 410 Gone: that version is compacted away, list again (paced: a second 410 in a row waits).
 * - 404 before the stream ever listed: the kind is not served; stop.
 * - 401/403: a namespace of a namespaced stream is "not served" and listed again once it answers.
 *   Refused before anything listed (the cluster-wide stream, or every namespace), the RBAC is wrong
 *   as a whole: stop, unless asked to retry forever.
 * - Anything else: retry after the error backoff.
 */

/** Why a stream restarted, as counted by `watch_restarts_total{reason}`. */
export type RestartReason = "closed" | "gone" | "error";

export interface StreamState {
  /** Where the next watch resumes; undefined: list first. */
  resourceVersion?: string;
  /** The stream has completed a list. */
  listed: boolean;
  /** 410s in a row without an event between them. */
  goneStreak: number;
}

export const NEW_STREAM: StreamState = Object.freeze({ listed: false, goneStreak: 0 });

/** How a failed list or watch failed (errors.ts' predicates, in the watcher). */
export type Failure = "gone" | "not-found" | "denied" | "other";

export type StreamInput =
  | { type: "listed"; resourceVersion: string }
  | { type: "event"; resourceVersion?: string }
  | { type: "closed"; received: number; elapsedMs: number }
  | {
    type: "failed";
    failure: Failure;
    /** The stream watches one namespace of several (not all namespaces). */
    namespaced: boolean;
    /** No stream of the watcher listed, and every other namespace is refused. */
    othersRefused: boolean;
  };

/** The wait before going on, which the pacing policy (watch_pacing.ts) measures. */
export type Pause =
  /** A watch that closed at once with nothing in it: the error backoff. */
  | { type: "closed-at-once" }
  /** A relist after 410: at once the first time in a row, then a backoff; and the relist budget. */
  | { type: "relist"; again: boolean }
  /** A failure: the error backoff. */
  | { type: "error" };

export type StreamAction =
  /** List when the state has no resourceVersion, else watch from it; after `pause`, if any. */
  | { type: "go"; pause?: Pause }
  /** Give up: `synced` rejects. */
  | { type: "stop"; reason: "not-served" | "forbidden" };

export interface StreamStep {
  state: StreamState;
  action: StreamAction;
  /** A restart to count. */
  restarted?: RestartReason;
  /** Record the stream's namespace as not served (a 401/403 of a namespaced stream). */
  deny?: boolean;
  /** The watcher may count as synced without that namespace (see `Watcher`). */
  settle?: boolean;
}

/** A watch that ends sooner than this with no event in it "closed at once". */
const CLOSED_AT_ONCE_MS = 1_000;

/** The next state and action of a stream in `state` after `input`. */
export function watchStep(
  state: StreamState,
  input: StreamInput,
  opts: { stopOnForbidden: boolean },
): StreamStep {
  const go: StreamAction = { type: "go" };
  switch (input.type) {
    case "listed":
      return {
        state: { ...state, resourceVersion: input.resourceVersion, listed: true },
        action: go,
      };
    case "event":
      return {
        state: {
          ...state,
          resourceVersion: input.resourceVersion ?? state.resourceVersion,
          goneStreak: 0,
        },
        action: go,
      };
    case "closed": {
      const atOnce = input.received === 0 && input.elapsedMs < CLOSED_AT_ONCE_MS;
      return {
        state,
        action: atOnce ? { type: "go", pause: { type: "closed-at-once" } } : go,
        restarted: "closed",
      };
    }
    case "failed":
      return failed(state, input, opts);
  }
}

function failed(
  state: StreamState,
  input: Extract<StreamInput, { type: "failed" }>,
  opts: { stopOnForbidden: boolean },
): StreamStep {
  if (input.failure === "gone") {
    return {
      state: { ...state, resourceVersion: undefined, goneStreak: state.goneStreak + 1 },
      action: { type: "go", pause: { type: "relist", again: state.goneStreak > 0 } },
      restarted: "gone",
    };
  }
  if (input.failure === "not-found" && !state.listed) {
    return { state, action: { type: "stop", reason: "not-served" } };
  }
  const retry: StreamAction = { type: "go", pause: { type: "error" } };
  const denied = input.failure === "denied";
  const fatal = input.namespaced ? input.othersRefused : !state.listed;
  // A refused namespace is recorded and listed again once it answers: what it holds may have
  // changed entirely.
  const refusedNamespace = denied && input.namespaced;
  const relist = { ...state, resourceVersion: undefined };
  if (denied && fatal && opts.stopOnForbidden) {
    const stop: StreamAction = { type: "stop", reason: "forbidden" };
    return refusedNamespace ? { state: relist, action: stop, deny: true } : { state, action: stop };
  }
  if (refusedNamespace) {
    return { state: relist, action: retry, restarted: "error", deny: true, settle: true };
  }
  return { state, action: retry, restarted: "error" };
}
