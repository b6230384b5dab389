/**
 * The Service that gives MiniCluster pods their DNS names: a headless Service named
 * `network.headlessName` (the pods' subdomain), or with `flux.minimalService` a Service on the
 * broker port that selects only the lead broker (index 0).
 */
import type { Service } from "kubernetes-types/core/v1.d.ts";
import {
  BROKER_PORT,
  COMPLETION_INDEX_LABEL,
  headlessServiceName,
  JOB_NAME_LABEL,
  jobName,
  MINICLUSTER_LABEL,
} from "./names.ts";
import { childMetadata } from "./owner.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";

/**
 * The headless Service selects every pod of this MiniCluster: the Job's pods and the services
 * pod, which both carry the MiniCluster label (the Go operator put the Job's `job-name` label on
 * the services pod instead, so that anything listing the Job's pods also found it).
 */
export function headlessSelector(mc: DefaultedMiniCluster): Record<string, string> {
  return { [MINICLUSTER_LABEL]: jobName(mc) };
}

/**
 * The lead broker only: the Job controller's own completion-index label on the Job's pods (the
 * Go operator patched a `job-index` label onto every pod of the namespace). The MiniCluster label
 * too, which only the operator sets (spec.pod.labels may not): another MiniCluster's pods can
 * copy the Job controller's labels, never this.
 */
export function brokerSelector(mc: DefaultedMiniCluster): Record<string, string> {
  return {
    [JOB_NAME_LABEL]: jobName(mc),
    [COMPLETION_INDEX_LABEL]: "0",
    [MINICLUSTER_LABEL]: jobName(mc),
  };
}

export function buildHeadlessService(mc: DefaultedMiniCluster): Service {
  const metadata = childMetadata(mc, headlessServiceName(mc));
  if (mc.spec.flux.minimalService) {
    return {
      apiVersion: "v1",
      kind: "Service",
      metadata,
      spec: {
        selector: brokerSelector(mc),
        ports: [{
          name: "flux-broker",
          port: BROKER_PORT,
          targetPort: BROKER_PORT,
          protocol: "TCP",
        }],
      },
    };
  }
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata,
    spec: {
      clusterIP: "None",
      selector: headlessSelector(mc),
      // Workers resolve the broker before it is ready: DNS records must exist for every pod.
      publishNotReadyAddresses: true,
    },
  };
}
