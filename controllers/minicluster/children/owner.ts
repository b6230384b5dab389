/**
 * Ownership of children: every object the operator creates for a MiniCluster names it as its
 * controller, so that garbage collection removes the children with the MiniCluster and the
 * controller maps child events back to the owning MiniCluster.
 */
import type { ObjectMeta, OwnerReference } from "kubernetes-types/meta/v1.d.ts";
import { childLabels } from "./names.ts";

export const MINICLUSTER_API_VERSION = "flux-framework.org/v1alpha2";
export const MINICLUSTER_KIND = "MiniCluster";

/**
 * What owning a child takes of a MiniCluster: its name, namespace and uid (a MiniCluster, a
 * defaulted one, or the metadata alone, as a test or `render` has it).
 */
export interface Owner {
  metadata?: { name?: string; namespace?: string; uid?: string };
}

/** The controller ownerReference to the MiniCluster (needs its uid: read it from the API). */
export function ownerReference(mc: Owner): OwnerReference {
  const name = mc.metadata?.name;
  const uid = mc.metadata?.uid;
  if (!name || !uid) {
    throw new Error("MiniCluster needs metadata.name and metadata.uid to own children");
  }
  return {
    apiVersion: MINICLUSTER_API_VERSION,
    kind: MINICLUSTER_KIND,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * Metadata of a child: its name, the MiniCluster's namespace, the child labels (plus any extra
 * labels, which never override the child labels the operator selects on) and the owner.
 */
export function childMetadata(
  mc: Owner,
  name: string,
  extraLabels: Record<string, string> = {},
): ObjectMeta {
  const namespace = mc.metadata?.namespace;
  if (!namespace) throw new Error("MiniCluster has no metadata.namespace");
  return {
    name,
    namespace,
    labels: { ...extraLabels, ...childLabels(mc) },
    ownerReferences: [ownerReference(mc)],
  };
}
