/**
 * How an older version's workspace ConfigMap is recognised: by its role label. The cache keeps such
 * a ConfigMap whole (cache_view.ts) so that workspace_recovery.ts can migrate its values into the
 * MiniClusterWorkspace; every other ConfigMap is kept as digests.
 */

/** Label of an older version's workspace ConfigMap. */
export const WORKSPACE_ROLE_LABEL = "flux-framework.org/role";
export const WORKSPACE_ROLE = "workspace";

/** True when a ConfigMap is an older version's workspace. */
export function isWorkspace(cm: { metadata?: { labels?: Record<string, string> } }): boolean {
  return cm.metadata?.labels?.[WORKSPACE_ROLE_LABEL] === WORKSPACE_ROLE;
}
