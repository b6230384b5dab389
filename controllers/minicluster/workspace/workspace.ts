/**
 * The workspace: what a MiniCluster must remember between reconciles, kept in the API rather than
 * in status, and the resolver that finds (or creates) it before anything is built.
 *
 * Status is an observation and may be lost or stale; the workspace decides what gets built. It is a
 * MiniClusterWorkspace (a kind of its own, crds/miniclusterworkspace.yaml, so no user object can
 * take its name) named like the MiniCluster and owned by it, holding the size the brokers were
 * bootstrapped with. The broker hostlist is written for maxSize when the cluster starts, so the
 * cluster can never scale beyond that maxSize, whatever the spec says later.
 *
 * It is a create-once dependent (runtime/controller/dependents.ts), never updated, and finding the sizes
 * writes nothing: the reconcile builds and polices the children before its first write, so a spec
 * that cannot be built leaves no workspace behind. The cache is trusted when it shows the workspace
 * owned by this MiniCluster (the operator never changes it, so any version the cache holds is the
 * one that was created); otherwise the workspace is read from the API server (one the cache does
 * not show yet, or one without our labels). What a missing workspace is to be created from is
 * workspace_recovery.ts's business: an older version's ConfigMap workspace (pruned once migrated),
 * the running cluster's hostlist, or — only when no broker was started — the spec.
 *
 * Sizes no workspace holds yet are `unconfirmed`: the workspace is created with them together with
 * the other children that do not wait for anything, in one round trip instead of one before them.
 * A MiniCluster of which the cache shows no child at all is new and skips the read: its sizes are
 * the spec's. The dependents' plan then writes the Job only if the workspace holds the maximum the
 * children were built for; if one existed after all with another maximum (another process made it
 * meanwhile), the reconcile stops before the Job and the next one builds everything from it.
 *
 * The workspace also keeps how the pods get the Flux view (flux_view_choice.ts): decided when the
 * workspace is made, before the Job exists, and never again for that MiniCluster, since a Job's pod
 * template cannot change. A workspace made before the choice existed holds none: its Job copies.
 */
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../../api/workspace.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import {
  type Dependent,
  NAME_TAKEN_RECHECK_MS,
  type Problem,
} from "../../../runtime/controller/dependents.ts";
import { getOrUndefined } from "../../../runtime/client/get_or_undefined.ts";
import { controllerOf, type KubeObject, type Store } from "../../../runtime/cache/store.ts";
import { CHILD_KINDS, type MiniClusterStores } from "../kinds/child_kinds.ts";
import { workspaceName } from "../children/names.ts";
import type { Owner } from "../children/owner.ts";
import type { FluxView, Sizing } from "../children/sizing.ts";
import { owned } from "../kinds/owned_children.ts";
import { recoverWorkspace, type Workspace } from "./workspace_recovery.ts";
import type { FluxViewChooser } from "./flux_view_choice.ts";

/**
 * The sizes a reconcile builds for: the user's (spec.size as defaulted), and the sizing the
 * children are built at (the workspace's maximum, the user's clamped to it).
 */
export interface Sizes extends Sizing {
  requestedSize: number;
  /** No workspace holds them yet: created with the first children, it must confirm them. */
  unconfirmed?: Unconfirmed;
}

/** The values a missing workspace is created with, and where they come from. */
export interface Unconfirmed {
  workspace: Workspace;
  /** A new MiniCluster's spec, or what workspace_recovery.ts found. */
  from: "new" | "spec" | "entrypoint" | "legacy";
}

/** What a workspace made for brokers started at `sizing` holds. */
export function workspaceAt(sizing: Sizing): Workspace {
  const { fluxView } = sizing;
  return { maxSize: sizing.maximumSize, size: sizing.effectiveSize, ...(fluxView && { fluxView }) };
}

/** The workspace holding `ws` for `mc`. */
export function buildWorkspace(mc: Owner, ws: Workspace): MiniClusterWorkspace {
  return owned(mc, {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniClusterWorkspace",
    metadata: { name: workspaceName(mc) },
    spec: { maxSize: ws.maxSize, size: ws.size, ...(ws.fluxView && { fluxView: ws.fluxView }) },
  });
}

/** Reads the values back; undefined when the object does not hold a usable workspace. */
function parseWorkspace(ws: MiniClusterWorkspace): Workspace | undefined {
  const { maxSize, size, fluxView } = ws.spec ?? {};
  if (!Number.isInteger(maxSize) || maxSize < 1) return undefined;
  return {
    maxSize,
    size: Number.isInteger(size) && size >= 1 ? size : maxSize,
    fluxView: fluxView === "ImageVolume" ? "ImageVolume" : "Copy",
  };
}

/** The workspace of `mc` holding `ws` as a create-once dependent. */
export function workspaceDependent(
  mc: DefaultedMiniCluster,
  workspaces: Store<MiniClusterWorkspace>,
  ws: Workspace,
): Dependent<MiniClusterWorkspace> {
  return {
    resource: MiniClusterWorkspaces,
    store: workspaces,
    namespace: mc.metadata?.namespace,
    name: workspaceName(mc),
    desired: () => buildWorkspace(mc, ws),
    drift: "createOnce",
  };
}

/** Whether the workspace `ws` holds the maximum and the view's mode `sizes` were built for. */
export function confirms(ws: MiniClusterWorkspace | undefined, sizes: Sizes): boolean {
  const held = ws === undefined ? undefined : parseWorkspace(ws);
  return held?.maxSize === sizes.maximumSize && held.fluxView === (sizes.fluxView ?? "Copy");
}

/** Why the workspace `ws`, found under the MiniCluster's workspace name, is not one to use. */
export function unusable(
  mc: Owner,
  ws: MiniClusterWorkspace,
): { problem: Problem; requeueAfterMs?: number } | undefined {
  const name = workspaceName(mc);
  if (controllerOf(ws)?.uid !== mc.metadata?.uid) {
    const owner = controllerOf(ws);
    const message = owner
      ? `MiniClusterWorkspace ${name} belongs to another object (${owner.kind} ${owner.name}, uid ${owner.uid})`
      : `MiniClusterWorkspace ${name} exists and is not owned by this MiniCluster`;
    // Someone else's object may go without an event this operator hears: look again.
    return {
      problem: { reason: "WorkspaceInvalid", message },
      requeueAfterMs: NAME_TAKEN_RECHECK_MS,
    };
  }
  if (parseWorkspace(ws)) return undefined;
  const message = `MiniClusterWorkspace ${name} does not hold a valid spec.maxSize`;
  return { problem: { reason: "WorkspaceInvalid", message } };
}

/** Finds the sizes of a MiniCluster: in its workspace, or what a missing one is to be made of. */
export class WorkspaceResolver {
  constructor(
    readonly client: ApiClient,
    readonly stores: MiniClusterStores,
    /** Decides the view's mode of a workspace to be made; none: Copy. */
    readonly fluxViews?: FluxViewChooser,
  ) {}

  /**
   * The sizes of `mc`, or why there are none. Reads the API server only when the cache does not
   * show the workspace; never writes.
   */
  async sizes(
    mc: DefaultedMiniCluster,
  ): Promise<Sizes | { problem: Problem; requeueAfterMs?: number }> {
    const requestedSize = mc.spec.size;
    const sized = (held: Workspace, unconfirmed?: Unconfirmed): Sizes => ({
      requestedSize,
      effectiveSize: Math.min(Math.max(requestedSize, 1), held.maxSize),
      maximumSize: held.maxSize,
      fluxView: held.fluxView ?? "Copy",
      ...(unconfirmed ? { unconfirmed } : {}),
    });
    if (this.#isNew(mc)) {
      const fluxView = await this.#choose(mc);
      const sizes = sized({ maxSize: mc.spec.maxSize, size: mc.spec.size, fluxView });
      return { ...sizes, unconfirmed: { workspace: workspaceAt(sizes), from: "new" } };
    }
    const name = workspaceName(mc);
    const found = this.stores.workspaces.get(mc.metadata?.namespace, name) ??
      await getOrUndefined<MiniClusterWorkspace>(
        this.client,
        MiniClusterWorkspaces,
        mc.metadata?.namespace,
        name,
      );
    if (found) return unusable(mc, found) ?? sized(parseWorkspace(found)!);
    const recovered = await recoverWorkspace(mc, this.client, this.stores);
    if ("problem" in recovered) return recovered;
    const { from } = recovered;
    // Without a running Job to read it from (and not an older version's), the mode is decided now.
    const workspace = recovered.workspace.fluxView || from === "legacy"
      ? recovered.workspace
      : { ...recovered.workspace, fluxView: await this.#choose(mc) };
    return sized(workspace, { workspace, from });
  }

  async #choose(mc: DefaultedMiniCluster): Promise<FluxView> {
    return this.fluxViews ? await this.fluxViews.choose(mc) : "Copy";
  }

  /**
   * The cache (with our own writes) shows no child of `mc` of a kind that shows a reconcile
   * (child_kinds.ts): nobody has reconciled it yet.
   */
  #isNew(mc: DefaultedMiniCluster): boolean {
    const uid = mc.metadata?.uid ?? "";
    return CHILD_KINDS.filter((row) => row.showsReconciled).every(({ key }) =>
      (this.stores[key] as Store<KubeObject>).byIndex("owner", uid).length === 0
    );
  }
}
