/**
 * What the pacing mechanisms share with the code around them: a write's priority (which the
 * client contract, runtime/client/api_client.ts, names), the mechanisms `--pacing-off` names and
 * the switches made of them, and how a freshness fence's read came out.
 *
 * A separate file because the client contract names the priority, while the admission layer
 * (runtime/pacing/write_pacing.ts) reads stores and writes metrics: the contract must not depend
 * on those. The switches are not the client's: each mechanism is handed its own where it is made.
 */

/**
 * The order in which writes waiting for a slot go: `critical` never waits (a leader's Lease
 * renewal: losing the Lease costs more than any write), `normal` (what makes the world as the spec
 * says) before `low` (reports of it: status and Events, which a later write supersedes anyway).
 */
export const PRIORITIES = ["critical", "normal", "low"] as const;
export type Priority = typeof PRIORITIES[number];

/**
 * The runtime's pacing mechanisms that `--pacing-off` names (the write slots and the burst yield
 * also have a bound of 0 as their off switch). A program may add mechanisms of its own.
 */
export const RUNTIME_MECHANISMS = [
  "write-slots",
  "burst-yield",
  "relist-budget",
  "freshness-fence",
  "own-writes",
] as const;

/** How a freshness fence's read of the live object came out. */
export type FenceResult = "fresh" | "stale" | "error";

/**
 * Whether each of the runtime's mechanisms runs: a plain value, made once from the names
 * `--pacing-off` gives, from which the manager hands each mechanism its own switch where it makes
 * it (runtime/manager.ts: the write slots, burst yield and relist budget to the write pacing
 * layer; the freshness fence and own writes to a program's controllers).
 */
export interface RuntimeSwitches {
  readonly writeSlots: boolean;
  readonly burstYield: boolean;
  readonly relistBudget: boolean;
  readonly freshnessFence: boolean;
  readonly ownWrites: boolean;
}

/** The switches of `off`, the names `--pacing-off` gave (a program's own names are ignored). */
export function runtimeSwitches(off: readonly string[] = []): RuntimeSwitches {
  const on = (name: typeof RUNTIME_MECHANISMS[number]) => !off.includes(name);
  return {
    writeSlots: on("write-slots"),
    burstYield: on("burst-yield"),
    relistBudget: on("relist-budget"),
    freshnessFence: on("freshness-fence"),
    ownWrites: on("own-writes"),
  };
}
