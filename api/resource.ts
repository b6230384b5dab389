/** The MiniCluster resource on the API server (its REST paths; runtime/resources.ts). */
import { resourceType } from "../runtime/resources.ts";

export const MiniClusters = resourceType(
  "flux-framework.org",
  "v1alpha2",
  "miniclusters",
  "MiniCluster",
  true,
  "crds/minicluster.yaml",
);
