/**
 * One Service per non-Flux application container with `ports`, so that the Flux container (and
 * users) reach e.g. a database sidecar by name. Each selects the Job's pods and maps every port
 * to itself.
 */
import type { Service } from "kubernetes-types/core/v1.d.ts";
import { containerServiceName, JOB_NAME_LABEL, jobName, MINICLUSTER_LABEL } from "./names.ts";
import { childMetadata } from "./owner.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";

/**
 * The Services, in the order of `spec.containers`. The Go operator selected every pod with the
 * MiniCluster's app label (the services pod too, which does not run these containers) and named
 * the Service after the container alone, so two MiniClusters with a "db" container collided.
 */
export function buildPortServices(mc: DefaultedMiniCluster): Service[] {
  return mc.spec.containers
    .filter((c) => !c.runFlux && (c.ports ?? []).length > 0)
    .map((c) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: childMetadata(mc, containerServiceName(mc, c.name!)),
      spec: {
        // The MiniCluster label, which only the operator sets, keeps out other MiniClusters' pods
        // (the services pod among them) that copy the Job's labels.
        selector: { [JOB_NAME_LABEL]: jobName(mc), [MINICLUSTER_LABEL]: jobName(mc) },
        ports: [...new Set(c.ports)].map((port) => ({
          name: `port-${port}`,
          port,
          targetPort: port,
          protocol: "TCP",
        })),
      },
    }));
}
