/** The MiniCluster resource on the API server (its REST paths; runtime/client/resources.ts). */
import { resourceType } from "../runtime/client/resources.ts";

export const MiniClusters = resourceType(
  "flux-framework.org",
  "v1alpha2",
  "miniclusters",
  "MiniCluster",
  true,
  "crds/minicluster.yaml",
);
