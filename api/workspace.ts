/**
 * The MiniClusterWorkspace (flux-framework.org/v1alpha2, crds/miniclusterworkspace.yaml): what the
 * operator remembers of a MiniCluster, written once, named like it and owned by it. Written by hand
 * (three fields): the CRD is its source of truth, and tests/unit/workspace_test.ts checks they agree.
 */
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import { resourceType } from "../runtime/client/resources.ts";

export interface MiniClusterWorkspace {
  apiVersion?: "flux-framework.org/v1alpha2";
  kind?: "MiniClusterWorkspace";
  metadata?: ObjectMeta;
  spec: {
    /** The maxSize the broker hostlist was written for: the scaling limit for the cluster's life. */
    maxSize: number;
    /** The size the cluster first started with. */
    size: number;
    /** How the pods get the Flux view; absent in workspaces made before the choice (Copy). */
    fluxView?: "ImageVolume" | "Copy";
  };
}

export const MiniClusterWorkspaces = resourceType(
  "flux-framework.org",
  "v1alpha2",
  "miniclusterworkspaces",
  "MiniClusterWorkspace",
  true,
  "crds/miniclusterworkspace.yaml",
);
