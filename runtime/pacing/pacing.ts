/**
 * What the client's admission layer (runtime/pacing/write_pacing.ts) promises to the code that writes: a
 * request's priority, the mechanisms that can be switched off, and the few reports they make.
 *
 * A separate file because the client contract (runtime/client/api_client.ts) names it, while the layer
 * itself reads stores and writes metrics: the contract must not depend on those.
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

/** The layer as the client carries it (`ApiClient.pacing`). */
export interface Pacing {
  /** Whether `mechanism` is on (every mechanism is, unless `--pacing-off` names it). */
  on(mechanism: string): boolean;
  /** A freshness fence read the live primary. */
  fenceRead(result: FenceResult): void;
  /** Reports `source.entries`, the writes an own-writes overlay remembers, on /metrics. */
  trackOwnWrites(source: { readonly entries: number }): void;
}
