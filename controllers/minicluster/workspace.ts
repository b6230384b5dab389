/**
 * What a MiniCluster must remember between reconciles, kept in the API rather than in status.
 *
 * Status is an observation and may be lost or stale; the values here decide what gets built, so they
 * live in objects the operator creates exactly once and reads straight from the API server (not the
 * cache, which may not have seen an object created a moment ago by a previous operator process):
 *
 * - the workspace ConfigMap, named like the MiniCluster and owned by it, holds the size the brokers
 *   were bootstrapped with. The broker hostlist is written for maxSize when the cluster starts, so the
 *   cluster can never scale beyond that maxSize, whatever the spec says later;
 * - the CURVE certificate lives in its Secret, generated once. It is never regenerated while the
 *   Secret exists: brokers that already started with a certificate cannot talk to brokers with a new
 *   one.
 *
 * Both are written with `create`, never `apply`: if two operator processes race (a restart, a
 * failover), the second gets AlreadyExists and adopts what the first wrote instead of overwriting it.
 */
import type { ConfigMap, Secret } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../runtime/client.ts";
import { isAlreadyExists, isNotFound } from "../../runtime/errors.ts";
import { ConfigMaps, type ResourceType, Secrets } from "../../runtime/resources.ts";
import type { Store } from "../../runtime/store.ts";
import { childMetadata } from "./children/owner.ts";
import { curveSecretName, FIELD_MANAGER, workspaceName } from "./children/names.ts";
import type { MiniClusterInput } from "./children/scripts/input.ts";

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

interface Owner {
  metadata?: { name?: string; namespace?: string; uid?: string };
}

/** The workspace ConfigMap holding `ws` for `mc`. */
export function buildWorkspace(mc: Owner, ws: Workspace): ConfigMap {
  const metadata = childMetadata(mc, workspaceName(mc), { [WORKSPACE_ROLE_LABEL]: WORKSPACE_ROLE });
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata,
    data: { [KEY_MAX_SIZE]: String(ws.maxSize), [KEY_SIZE]: String(ws.size) },
  };
}

/** Reads the values back; undefined when the ConfigMap does not hold a usable workspace. */
export function parseWorkspace(cm: ConfigMap): Workspace | undefined {
  const maxSize = Number(cm.data?.[KEY_MAX_SIZE]);
  const size = Number(cm.data?.[KEY_SIZE]);
  if (!Number.isInteger(maxSize) || maxSize < 1) return undefined;
  return { maxSize, size: Number.isInteger(size) && size >= 1 ? size : maxSize };
}

/** True when a ConfigMap is a workspace (the reconciler never prunes it as a stale child). */
export function isWorkspace(cm: { metadata?: { labels?: Record<string, string> } }): boolean {
  return cm.metadata?.labels?.[WORKSPACE_ROLE_LABEL] === WORKSPACE_ROLE;
}

/** How ensureWorkspace goes about it. */
export interface EnsureWorkspaceOptions {
  /**
   * Create without reading first (a MiniCluster nobody reconciled before has no workspace yet):
   * one request instead of two; an existing workspace answers AlreadyExists and is read then.
   */
  createFirst?: boolean;
  /** Runs before the create (the reconciler's check that its view of the MiniCluster is fresh). */
  beforeCreate?: () => Promise<void>;
}

/**
 * The MiniCluster's workspace, created from `initial` when it does not exist yet. Read from the
 * API server on every call: the workspace decides what gets built, so a stale view is not allowed.
 * A workspace that exists but is not usable (edited by hand) is an error for the caller to report.
 */
export async function ensureWorkspace(
  client: KubeClient,
  mc: Owner,
  initial: Workspace,
  opts: EnsureWorkspaceOptions = {},
): Promise<{ workspace: Workspace; created: boolean }> {
  const namespace = mc.metadata?.namespace;
  const name = workspaceName(mc);
  let existing = opts.createFirst
    ? undefined
    : await getOrUndefined<ConfigMap>(client, ConfigMaps, namespace, name);
  if (!existing) {
    try {
      await opts.beforeCreate?.();
      await client.create(ConfigMaps, buildWorkspace(mc, initial), { fieldManager: FIELD_MANAGER });
      return { workspace: initial, created: true };
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
      // It exists (another operator process won the race, or createFirst guessed wrong): adopt
      // what is there.
      existing = await client.get<ConfigMap>(ConfigMaps, namespace, name);
    }
  }
  const owner = existing.metadata?.ownerReferences?.find((o) => o.controller);
  if (owner && owner.uid !== mc.metadata?.uid) {
    throw new WorkspaceError(
      `ConfigMap ${name} belongs to another object (${owner.kind} ${owner.name}, uid ${owner.uid})`,
    );
  }
  // The operator creates the workspace owned, in one request: an unowned one is someone else's.
  if (!owner) {
    throw new WorkspaceError(`ConfigMap ${name} exists and is not owned by this MiniCluster`);
  }
  const workspace = parseWorkspace(existing);
  if (!workspace) {
    throw new WorkspaceError(`ConfigMap ${name} does not hold a valid ${KEY_MAX_SIZE}`);
  }
  return { workspace, created: false };
}

/** GET, with NotFound as undefined. */
export async function getOrUndefined<T>(
  client: KubeClient,
  rt: ResourceType,
  namespace: string | undefined,
  name: string,
): Promise<T | undefined> {
  try {
    return await client.get<T>(rt, namespace, name);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** The workspace exists but cannot be used: retrying will not help, a person must look. */
export class WorkspaceError extends Error {
  override name = "WorkspaceError";
}

/** How the curve certificate is made and wrapped into its Secret (the builders in children/). */
export interface CurveBuilders {
  generate(mc: MiniClusterInput): string | Promise<string>;
  build(mc: MiniClusterInput, certificate: string): Secret;
}

/** The generated certificate's Secret: owned by the MiniCluster, labelled like every child. */
export function generatedCurveSecret(mc: MiniClusterInput, built: Secret): Secret {
  const { ownerReferences: _, ...meta } = built.metadata ?? {};
  return {
    ...built,
    metadata: { ...meta, ...childMetadata(mc, curveSecretName(mc), built.metadata?.labels) },
  };
}

/**
 * Makes sure the generated CURVE certificate Secret exists, creating it once. The cache is trusted
 * when it shows the Secret (no request). Otherwise a new certificate is created straight away, in
 * one request: `create` never overwrites, so when the Secret exists after all (the cache lags
 * behind a Secret a previous operator process created a moment ago, or someone else's Secret has
 * the name, which the label-selected cache cannot see) the answer is AlreadyExists, the new
 * certificate is dropped and the existing Secret is read from the API server to check its owner.
 * Returns the Secret when this call created it.
 */
export async function ensureCurveSecret(
  client: KubeClient,
  secrets: Store<Secret>,
  mc: MiniClusterInput,
  curve: CurveBuilders,
  beforeCreate?: () => Promise<void>,
): Promise<Secret | undefined> {
  const namespace = mc.metadata?.namespace;
  const name = curveSecretName(mc);
  const checkOwner = (existing: Secret) => {
    // Someone else's Secret of that name would hand our brokers a key we did not make.
    const owner = existing.metadata?.ownerReferences?.find((o) => o.controller);
    if (owner?.uid !== mc.metadata?.uid) {
      throw new WorkspaceError(`Secret ${name} exists and is not owned by this MiniCluster`);
    }
    return undefined;
  };
  const cached = secrets.get(namespace, name);
  if (cached) return checkOwner(cached);
  await beforeCreate?.();
  const secret = generatedCurveSecret(mc, curve.build(mc, await curve.generate(mc)));
  try {
    return await client.create(Secrets, secret, { fieldManager: FIELD_MANAGER });
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    const existing = await getOrUndefined<Secret>(client, Secrets, namespace, name);
    // Deleted again meanwhile: the next reconcile creates it.
    if (!existing) throw e;
    return checkOwner(existing);
  }
}
