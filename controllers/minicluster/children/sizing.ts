/**
 * The sizes the children are built for, handed to every builder that needs one beside the
 * defaulted spec: `f(spec, sizing)`. The spec says what the user asked for (spec.size, spec.maxSize
 * as api/defaults.ts defaults them); the sizing is what the reconciler decided from it and the
 * workspace (workspace.ts `Sizes`): the maximum the brokers were bootstrapped with, and the asked
 * size clamped to it. A builder reads sizes from here only, never from the spec.
 */
import type { DefaultedMiniCluster } from "../../../api/mod.ts";

export interface Sizing {
  /**
   * The brokers to run: the Job's parallelism and completions, `flux submit -N`, the quorum of a
   * cluster that may grow, the bound of the gang's minCount.
   */
  effectiveSize: number;
  /** The size the broker hostlist is written for: the largest the cluster can be scaled to. */
  maximumSize: number;
}

/**
 * A MiniCluster whose brokers start now, at the sizes its spec asks for: what `render` and the
 * bench's raw client build (the reconciler's come from the workspace).
 */
export function specSizing(mc: DefaultedMiniCluster): Sizing {
  return { effectiveSize: mc.spec.size, maximumSize: mc.spec.maxSize };
}
