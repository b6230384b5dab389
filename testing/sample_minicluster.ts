/** The smallest MiniCluster the integration, e2e and fault tests start from. */
import type { MiniCluster } from "../api/mod.ts";

/** One Flux container running `hostname`, size 2, with `spec` merged over it. */
export function sampleMiniCluster(
  name: string,
  namespace: string,
  spec: Partial<MiniCluster["spec"]> = {},
): MiniCluster {
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name, namespace },
    spec: {
      containers: [{ image: "ghcr.io/rse-ops/accounting:app-latest", command: "hostname" }],
      size: 2,
      ...spec,
    },
  };
}
