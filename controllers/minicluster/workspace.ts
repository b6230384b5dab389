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
 * It is a create-once dependent (runtime/dependents.ts), never updated. The cache is trusted when
 * it shows the workspace owned by this MiniCluster (the operator never changes it, so any version
 * the cache holds is the one that was created); otherwise the create-only write answers whether one
 * exists after all (one the cache does not show yet), which is then read from the API server. If
 * two operator processes race, the second adopts what the first wrote instead of overwriting it.
 * What a missing workspace is created from is workspace_recovery.ts's business: an older version's
 * ConfigMap workspace (deleted once migrated), the running cluster's hostlist, or — only when no
 * broker was started — the spec.
 *
 * A MiniCluster of which the cache shows no child at all is new: its sizes are taken from the spec
 * and its workspace is created together with the other children, in one round trip instead of one
 * before them (`assumed`). The dependents' plan then writes the Job only if the workspace holds what
 * was assumed; if one existed after all with another maximum, the reconcile stops before the Job and
 * the next one builds everything from the workspace (no longer new: its children exist).
 */
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import type { DefaultedMiniCluster } from "../../api/mod.ts";
import type { ApiClient } from "../../runtime/api_client.ts";
import {
  deleteObserved,
  type Dependent,
  type DependentResources,
  type Problem,
} from "../../runtime/dependents.ts";
import type { FreshnessFence } from "../../runtime/freshness_fence.ts";
import { ConfigMaps } from "../../runtime/resources.ts";
import { controllerOf, type KubeObject, type Store } from "../../runtime/store.ts";
import { CHILD_KINDS } from "./child_kinds.ts";
import { workspaceName } from "./children/names.ts";
import { owned } from "./desired.ts";
import type { EventRecorder } from "./events.ts";
import type { MiniClusterStores } from "./stores.ts";
import { recoverWorkspace, type Workspace } from "./workspace_recovery.ts";

/** The sizes a reconcile builds for: the user's, the maximum, and the one applied. */
export interface Sizes {
  requestedSize: number;
  effectiveSize: number;
  maximumSize: number;
  /** Taken from the spec for a new MiniCluster: its workspace must confirm them (see above). */
  assumed?: boolean;
}

interface Owner {
  metadata?: { name?: string; namespace?: string; uid?: string };
}

/** The workspace holding `ws` for `mc`. */
export function buildWorkspace(mc: Owner, ws: Workspace): MiniClusterWorkspace {
  return owned(mc, {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniClusterWorkspace",
    metadata: { name: workspaceName(mc) },
    spec: { maxSize: ws.maxSize, size: ws.size },
  });
}

/** Reads the values back; undefined when the object does not hold a usable workspace. */
function parseWorkspace(ws: MiniClusterWorkspace): Workspace | undefined {
  const { maxSize, size } = ws.spec ?? {};
  if (!Number.isInteger(maxSize) || maxSize < 1) return undefined;
  return { maxSize, size: Number.isInteger(size) && size >= 1 ? size : maxSize };
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

/** Whether the workspace `ws` holds the maximum `sizes` were built for. */
export function confirms(ws: MiniClusterWorkspace | undefined, sizes: Sizes): boolean {
  return ws !== undefined && parseWorkspace(ws)?.maxSize === sizes.maximumSize;
}

/** Finds the sizes of a MiniCluster in its workspace, creating it when the cluster first starts. */
export class WorkspaceResolver {
  constructor(
    readonly dependents: DependentResources,
    readonly client: ApiClient,
    readonly stores: MiniClusterStores,
    readonly recorder: EventRecorder,
  ) {}

  /** The sizes of `mc` (`requestedSize`: its spec.size as written), or why there are none. */
  async sizes(
    mc: DefaultedMiniCluster,
    requestedSize: number,
    fence: FreshnessFence,
  ): Promise<Sizes | { problem: Problem; requeueAfterMs?: number }> {
    const name = workspaceName(mc);
    if (this.#isNew(mc)) {
      const maximumSize = mc.spec.maxSize;
      const effectiveSize = Math.min(Math.max(requestedSize, 1), maximumSize);
      return { requestedSize, effectiveSize, maximumSize, assumed: true };
    }
    const cached = this.stores.workspaces.get(mc.metadata?.namespace, name);
    const recovered = cached ? undefined : await recoverWorkspace(mc, this.client, this.stores);
    if (recovered && "problem" in recovered) return recovered;
    const values = recovered?.workspace ?? { maxSize: mc.spec.maxSize, size: mc.spec.size };
    const dependent = workspaceDependent(mc, this.stores.workspaces, values);
    const found = await this.dependents.ensure(mc, dependent, fence);
    if (found.taken) {
      const owner = controllerOf(found.taken);
      const message = owner
        ? `MiniClusterWorkspace ${name} belongs to another object (${owner.kind} ${owner.name}, uid ${owner.uid})`
        : `MiniClusterWorkspace ${name} exists and is not owned by this MiniCluster`;
      // Someone else's object may go without an event this operator hears: look again.
      return {
        problem: { reason: "WorkspaceInvalid", message },
        requeueAfterMs: found.requeueAfterMs,
      };
    }
    if (!found.object) return { problem: found.problem!, requeueAfterMs: found.requeueAfterMs };
    const workspace = parseWorkspace(found.object);
    if (!workspace) {
      const message = `MiniClusterWorkspace ${name} does not hold a valid spec.maxSize`;
      return { problem: { reason: "WorkspaceInvalid", message } };
    }
    if (found.created && recovered?.from === "legacy") {
      // Migrated: the older version's ConfigMap goes (only that one: guarded by its uid).
      await deleteObserved(this.client, ConfigMaps, recovered.legacy);
    }
    if (found.created && recovered?.from === "entrypoint") {
      await this.recorder.emit(mc, {
        type: "Warning",
        reason: "WorkspaceRecovered",
        message: `the MiniClusterWorkspace ${name} was missing; made again from the running ` +
          `brokers' hostlist (maxSize ${workspace.maxSize}), not from the spec`,
      });
    }
    return {
      requestedSize,
      effectiveSize: Math.min(Math.max(requestedSize, 1), workspace.maxSize),
      maximumSize: workspace.maxSize,
    };
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
