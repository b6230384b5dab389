/**
 * The dependents' plan of one reconcile (runtime/dependents.ts): every kind of child with a wave in
 * the table of child_kinds.ts gives its dependents (each with the kind's store and drift policy),
 * grouped in the kinds' waves; every pruned kind is where pruning looks. The workspace, made from
 * the reconcile's sizes, comes with the first wave; sizes assumed for a new MiniCluster must be
 * confirmed by it before the next wave (the Job) is written.
 */
import type { DefaultedMiniCluster } from "../../api/mod.ts";
import type { MiniClusterWorkspace } from "../../api/workspace.ts";
import type { Dependent, DependentPlan, DependentsOutcome } from "../../runtime/dependents.ts";
import type { KubeObject, Store } from "../../runtime/store.ts";
import { CHILD_KINDS, childWaves, type DependentsInput } from "./child_kinds.ts";
import type { DesiredChildren } from "./desired.ts";
import type { MiniClusterStores } from "./stores.ts";
import { confirms, type Sizes, workspaceDependent } from "./workspace.ts";

export { type CurveBuilders, defaultCurve } from "./curve_builders.ts";

/**
 * The dependents of `mc` built for `sizes`, in the waves they are written in, and where pruning
 * looks. Sizes assumed for a new MiniCluster must be confirmed by its workspace before the Job.
 */
export function miniClusterDependents(
  mc: DefaultedMiniCluster,
  desired: DesiredChildren,
  sizes: Sizes,
  stores: MiniClusterStores,
  io: DependentsInput["io"],
): DependentPlan {
  // The sizes' values, never the spec's: this creates the workspace only for a new MiniCluster
  // (whose sizes are the spec's) or one whose workspace went since the sizes were read.
  const workspace = workspaceDependent(mc, stores.workspaces, {
    maxSize: sizes.maximumSize,
    size: sizes.effectiveSize,
  });
  const input: DependentsInput = { mc, desired, stores, workspace, io };
  // A wave without dependents (no Job yet for a queued MiniCluster, no services pod) is left out.
  const waves = childWaves()
    .map((rows) => rows.flatMap((row) => row.dependents?.(input) ?? []))
    .filter((wave) => wave.length > 0);
  const pruned = CHILD_KINDS.filter((row) => row.pruned).map((row) => ({
    resource: row.rt,
    store: stores[row.key] as Store<KubeObject>,
  }));
  const proceed = (outcome: DependentsOutcome) =>
    confirms(outcome.results.get(workspace as Dependent)?.object as MiniClusterWorkspace, sizes);
  return { waves, pruned, ...(sizes.assumed ? { proceed } : {}) };
}
