/**
 * The dependents' plan of one reconcile (runtime/controller/dependents.ts): every kind of child with a wave in
 * the table of child_kinds.ts gives its dependents (each with the kind's store and drift policy),
 * grouped in the kinds' waves; every pruned kind is where pruning looks. The workspace, made from
 * the reconcile's sizes, comes with the first wave; sizes assumed for a new MiniCluster must be
 * confirmed by it before the next wave (the Job) is written.
 */
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import type { MiniClusterWorkspace } from "../../../api/workspace.ts";
import type {
  Dependent,
  DependentPlan,
  DependentsOutcome,
} from "../../../runtime/controller/dependents.ts";
import type { KubeObject, Store } from "../../../runtime/cache/store.ts";
import {
  CHILD_KINDS,
  childWaves,
  type DependentsInput,
  dependentsOf,
  type DesiredChildren,
  type MiniClusterStores,
} from "./child_kinds.ts";
import { confirms, type Sizes, workspaceAt, workspaceDependent } from "../workspace/workspace.ts";

export { type CurveBuilders, defaultCurve } from "../policy/curve_builders.ts";

/** The plan of a MiniCluster's dependents, and its workspace among them (workspace.ts). */
export interface MiniClusterPlan extends DependentPlan {
  workspace: Dependent<MiniClusterWorkspace>;
}

/**
 * The dependents of `mc` built for `sizes`, in the waves they are written in, and where pruning
 * looks. Sizes no workspace holds yet must be confirmed by the workspace before the Job (and before
 * pruning, which deletes an older version's workspace ConfigMap once it is migrated).
 */
export function miniClusterDependents(
  mc: DefaultedMiniCluster,
  desired: DesiredChildren,
  sizes: Sizes,
  stores: MiniClusterStores,
  io: DependentsInput["io"],
): MiniClusterPlan {
  // The sizes' values, never the spec's: this creates the workspace when no workspace held the
  // sizes (workspace.ts), or when it went since they were read.
  const workspace = workspaceDependent(
    mc,
    stores.workspaces,
    sizes.unconfirmed?.workspace ?? workspaceAt(sizes),
  );
  const input: DependentsInput = { mc, desired, stores, workspace, io };
  // A wave stays when it has no dependents (no Job yet for a MiniCluster suspended from the start),
  // so that the workspace is still confirmed before pruning.
  const waves = childWaves().map((rows) => rows.flatMap((row) => dependentsOf(row, input)));
  const pruned = CHILD_KINDS.filter((row) => row.pruned).map((row) => ({
    resource: row.rt,
    store: stores[row.key] as Store<KubeObject>,
  }));
  const proceed = (outcome: DependentsOutcome) =>
    confirms(outcome.results.get(workspace as Dependent)?.object as MiniClusterWorkspace, sizes);
  return { waves, pruned, workspace, ...(sizes.unconfirmed ? { proceed } : {}) };
}
