// The list+watch stream's state machine (runtime/watch/watch_step.ts): each input from a fresh or a
// watching stream, and the sequences the watcher lives through (410 streaks, refused namespaces).
import assert from "node:assert/strict";
import {
  NEW_STREAM,
  type StreamInput,
  type StreamState,
  watchStep,
} from "../../runtime/watch/watch_step.ts";

const STOP = { stopOnForbidden: true };
const RETRY = { stopOnForbidden: false };
const WATCHING: StreamState = { resourceVersion: "10", listed: true, goneStreak: 0 };

function failed(
  failure: "gone" | "not-found" | "denied" | "other",
  more: { namespaced?: boolean; othersRefused?: boolean } = {},
): StreamInput {
  return { type: "failed", failure, namespaced: false, othersRefused: false, ...more };
}

/** The states and steps of `inputs` run in turn from `state`. */
function run(state: StreamState, inputs: StreamInput[], opts = STOP) {
  return inputs.map((input) => {
    const step = watchStep(state, input, opts);
    state = step.state;
    return step;
  });
}

Deno.test("watch step: a new stream lists, then watches from the list's version", () => {
  assert.equal(NEW_STREAM.resourceVersion, undefined, "a new stream lists first");
  const listed = watchStep(NEW_STREAM, { type: "listed", resourceVersion: "7" }, STOP);
  assert.deepEqual(listed, {
    state: { resourceVersion: "7", listed: true, goneStreak: 0 },
    action: { type: "go" },
  });
});

Deno.test("watch step: events move the version on (a bookmark's too); one without keeps it", () => {
  const [a, b] = run(WATCHING, [
    { type: "event", resourceVersion: "11" },
    { type: "event" },
  ]);
  assert.equal(a.state.resourceVersion, "11");
  assert.equal(b.state.resourceVersion, "11");
  assert.deepEqual(b.action, { type: "go" });
});

Deno.test("watch step: a closed watch resumes; one closed at once with nothing pauses first", () => {
  const resumed = watchStep(WATCHING, { type: "closed", received: 0, elapsedMs: 300_000 }, STOP);
  assert.deepEqual(resumed, { state: WATCHING, action: { type: "go" }, restarted: "closed" });
  const busy = watchStep(WATCHING, { type: "closed", received: 3, elapsedMs: 10 }, STOP);
  assert.deepEqual(busy.action, { type: "go" });
  const atOnce = watchStep(WATCHING, { type: "closed", received: 0, elapsedMs: 999 }, STOP);
  assert.deepEqual(atOnce.action, { type: "go", pause: { type: "closed-at-once" } });
  assert.equal(atOnce.state.resourceVersion, "10", "resumes where it was");
});

Deno.test("watch step: 410 relists, at once the first time in a row only; an event ends the streak", () => {
  const steps = run(WATCHING, [
    failed("gone"),
    { type: "listed", resourceVersion: "20" },
    failed("gone"),
    failed("gone"),
    { type: "listed", resourceVersion: "30" },
    { type: "event", resourceVersion: "31" },
    failed("gone"),
  ]);
  assert.deepEqual(steps.map((s) => s.state.resourceVersion), [
    undefined,
    "20",
    undefined,
    undefined,
    "30",
    "31",
    undefined,
  ]);
  const relists = steps.filter((s) => s.restarted === "gone").map((s) => s.action);
  assert.deepEqual(relists, [
    { type: "go", pause: { type: "relist", again: false } },
    { type: "go", pause: { type: "relist", again: true } },
    { type: "go", pause: { type: "relist", again: true } },
    { type: "go", pause: { type: "relist", again: false } },
  ]);
});

Deno.test("watch step: 404 before the first list stops (kind not served); after it, a retry", () => {
  assert.deepEqual(watchStep(NEW_STREAM, failed("not-found"), STOP), {
    state: NEW_STREAM,
    action: { type: "stop", reason: "not-served" },
  });
  assert.deepEqual(watchStep(NEW_STREAM, failed("not-found"), RETRY).action.type, "stop");
  assert.deepEqual(watchStep(WATCHING, failed("not-found"), STOP), {
    state: WATCHING,
    action: { type: "go", pause: { type: "error" } },
    restarted: "error",
  });
});

Deno.test("watch step: a cluster-wide stream refused before its first list stops, unless told to retry", () => {
  assert.deepEqual(watchStep(NEW_STREAM, failed("denied"), STOP).action, {
    type: "stop",
    reason: "forbidden",
  });
  const retried = watchStep(NEW_STREAM, failed("denied"), RETRY);
  assert.deepEqual(retried.action, { type: "go", pause: { type: "error" } });
  assert.equal(retried.deny, undefined, "no namespace to record");
  assert.deepEqual(watchStep(NEW_STREAM, failed("denied"), STOP).state, NEW_STREAM);
  const later = watchStep(WATCHING, failed("denied"), STOP);
  assert.deepEqual(later.action, { type: "go", pause: { type: "error" } });
  assert.equal(later.state.resourceVersion, "10", "the whole scope is kept and resumed");
});

Deno.test("watch step: a refused namespace is recorded and listed again; all refused stops", () => {
  const one = watchStep(WATCHING, failed("denied", { namespaced: true }), STOP);
  assert.deepEqual(one, {
    state: { ...WATCHING, resourceVersion: undefined },
    action: { type: "go", pause: { type: "error" } },
    restarted: "error",
    deny: true,
    settle: true,
  });
  const all = watchStep(
    NEW_STREAM,
    failed("denied", { namespaced: true, othersRefused: true }),
    STOP,
  );
  assert.deepEqual(all.action, { type: "stop", reason: "forbidden" });
  assert.equal(all.deny, true, "recorded before stopping");
  const waiting = watchStep(
    NEW_STREAM,
    failed("denied", { namespaced: true, othersRefused: true }),
    RETRY,
  );
  assert.deepEqual(waiting.action, { type: "go", pause: { type: "error" } });
});

Deno.test("watch step: any other failure retries after the error pause, keeping the version", () => {
  assert.deepEqual(watchStep(WATCHING, failed("other"), STOP), {
    state: WATCHING,
    action: { type: "go", pause: { type: "error" } },
    restarted: "error",
  });
  assert.deepEqual(
    watchStep(NEW_STREAM, failed("other", { namespaced: true }), STOP).state,
    NEW_STREAM,
  );
});
