/**
 * The sizes the children are built for, and how their pods get the Flux view, handed to every
 * builder that needs one beside the defaulted spec: `f(spec, sizing)`. The spec says what the user asked for (spec.size, spec.maxSize
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
  /**
   * How the pods get the Flux view, fixed with the Job like the sizes (the workspace keeps it,
   * docs/flux-view.md). Absent: Copy, what every Job had before the choice existed.
   */
  fluxView?: FluxView;
}

/**
 * ImageVolume: the view image is mounted read-only (a Kubernetes image volume), nothing is copied;
 * Copy: the flux-view init container copies the view into the shared emptyDir.
 */
export type FluxView = "ImageVolume" | "Copy";

/**
 * Whether the pods mount the view image: ImageVolume, unless the application image brings Flux
 * (`flux.container.disable`: the init container then writes the configuration alone, as before).
 */
export function mountsViewImage(mc: DefaultedMiniCluster, sizing: Sizing): boolean {
  return sizing.fluxView === "ImageVolume" && !mc.spec.flux.container.disable;
}

/**
 * A MiniCluster whose brokers start now, at the sizes its spec asks for: what `render` and the
 * bench's raw client build (the reconciler's come from the workspace). Without a cluster to ask,
 * `viewFrom: Auto` is the copy, as `--flux-view-mount=auto` decides where no node can mount it.
 */
export function specSizing(mc: DefaultedMiniCluster): Sizing {
  const fluxView: FluxView = mc.spec.flux.container.viewFrom === "ImageVolume"
    ? "ImageVolume"
    : "Copy";
  return { effectiveSize: mc.spec.size, maximumSize: mc.spec.maxSize, fluxView };
}
