/**
 * The workspace: what a MiniCluster must remember between reconciles, kept in the API rather than
 * in status, and the resolver that finds (or creates) it before anything is built.
 *
 * Status is an observation and may be lost or stale; the workspace decides what gets built. It is a
 * ConfigMap named like the MiniCluster and owned by it, holding the size the brokers were
 * bootstrapped with. The broker hostlist is written for maxSize when the cluster starts, so the
 * cluster can never scale beyond that maxSize, whatever the spec says later.
 *
 * It is a create-once dependent (runtime/dependents.ts): created from the spec's sizes when the
 * cluster first starts, never updated. The cache is trusted when it shows the workspace owned by
 * this MiniCluster (the operator never changes it, so any version the cache holds is the one that
 * was created); otherwise the create-only write answers whether one exists after all (a previous
 * process's, one the label-selected cache cannot see), which is then read from the API server. If
 * two operator processes race, the second adopts what the first wrote instead of overwriting it.
 *
 * A MiniCluster of which the cache shows no child at all is new: its sizes are taken from the spec
 * and its workspace is created together with the other children, in one round trip instead of one
 * before them (`assumed`). The dependents' plan then writes the Job only if the workspace holds what
 * was assumed; if one existed after all with another maximum, the reconcile stops before the Job and
 * the next one builds everything from the workspace (no longer new: its children exist).
 */
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import type { DefaultedMiniCluster } from "../../api/mod.ts";
import type { Dependent, DependentResources, Problem } from "../../runtime/dependents.ts";
import type { FreshnessFence } from "../../runtime/freshness_fence.ts";
import { ConfigMaps } from "../../runtime/resources.ts";
import { controllerOf, type KubeObject, type Store } from "../../runtime/store.ts";
import { workspaceName } from "./children/names.ts";
import { owned } from "./desired.ts";
import type { MiniClusterStores } from "./stores.ts";

/** Label telling a workspace ConfigMap from the MiniCluster's other ConfigMaps. */
export const WORKSPACE_ROLE_LABEL = "flux-framework.org/role";
export const WORKSPACE_ROLE = "workspace";

const KEY_MAX_SIZE = "bootstrap-max-size";
const KEY_SIZE = "bootstrap-size";

/** The remembered values. */
export interface Workspace {
  /** The maxSize the broker hostlist was written for: the scaling limit for the cluster's life. */
  maxSize: number;
  /** The size the cluster first started with. */
  size: number;
}

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

/** The workspace ConfigMap holding `ws` for `mc`. */
export function buildWorkspace(mc: Owner, ws: Workspace): ConfigMap {
  return owned(mc, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: workspaceName(mc), labels: { [WORKSPACE_ROLE_LABEL]: WORKSPACE_ROLE } },
    data: { [KEY_MAX_SIZE]: String(ws.maxSize), [KEY_SIZE]: String(ws.size) },
  });
}

/** Reads the values back; undefined when the ConfigMap does not hold a usable workspace. */
export function parseWorkspace(cm: ConfigMap): Workspace | undefined {
  const maxSize = Number(cm.data?.[KEY_MAX_SIZE]);
  const size = Number(cm.data?.[KEY_SIZE]);
  if (!Number.isInteger(maxSize) || maxSize < 1) return undefined;
  return { maxSize, size: Number.isInteger(size) && size >= 1 ? size : maxSize };
}

/** True when a ConfigMap is a workspace (kept whole by the cache, see cache_view.ts). */
export function isWorkspace(cm: { metadata?: { labels?: Record<string, string> } }): boolean {
  return cm.metadata?.labels?.[WORKSPACE_ROLE_LABEL] === WORKSPACE_ROLE;
}

/** The workspace of `mc` as a create-once dependent, created from the spec's sizes. */
export function workspaceDependent(
  mc: DefaultedMiniCluster,
  configMaps: Store<ConfigMap>,
): Dependent<ConfigMap> {
  return {
    resource: ConfigMaps,
    store: configMaps,
    namespace: mc.metadata?.namespace,
    name: workspaceName(mc),
    desired: () => buildWorkspace(mc, { maxSize: mc.spec.maxSize, size: mc.spec.size }),
    drift: "createOnce",
  };
}

/** Whether the workspace `cm` holds the maximum `sizes` were built for. */
export function confirms(cm: ConfigMap | undefined, sizes: Sizes): boolean {
  return cm !== undefined && parseWorkspace(cm)?.maxSize === sizes.maximumSize;
}

/** Finds the sizes of a MiniCluster in its workspace, creating it when the cluster first starts. */
export class WorkspaceResolver {
  constructor(
    readonly dependents: DependentResources,
    readonly stores: MiniClusterStores,
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
    const dependent = workspaceDependent(mc, this.stores.configMaps);
    const found = await this.dependents.ensure(mc, dependent, fence);
    if (found.taken) {
      const owner = controllerOf(found.taken);
      const message = owner
        ? `ConfigMap ${name} belongs to another object (${owner.kind} ${owner.name}, uid ${owner.uid})`
        : `ConfigMap ${name} exists and is not owned by this MiniCluster`;
      // Someone else's object is no event this operator hears when it goes: look again.
      return {
        problem: { reason: "WorkspaceInvalid", message },
        requeueAfterMs: found.requeueAfterMs,
      };
    }
    if (!found.object) return { problem: found.problem!, requeueAfterMs: found.requeueAfterMs };
    const workspace = parseWorkspace(found.object);
    if (!workspace) {
      const message = `ConfigMap ${name} does not hold a valid ${KEY_MAX_SIZE}`;
      return { problem: { reason: "WorkspaceInvalid", message } };
    }
    return {
      requestedSize,
      effectiveSize: Math.min(Math.max(requestedSize, 1), workspace.maxSize),
      maximumSize: workspace.maxSize,
    };
  }

  /** The cache (with our own writes) shows no child of `mc`: nobody has reconciled it yet. */
  #isNew(mc: DefaultedMiniCluster): boolean {
    const uid = mc.metadata?.uid ?? "";
    const { configMaps, secrets, services, jobs } = this.stores;
    return [configMaps, secrets, services, jobs].every((store) =>
      (store as Store<KubeObject>).byIndex("owner", uid).length === 0
    );
  }
}
