/**
 * The services pod `<name>-services`: the `spec.services` containers, alongside the cluster in
 * the headless Service's DNS as `<name>-services.<headlessName>.<namespace>.svc.cluster.local`.
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { serviceContainers } from "./pod/containers.ts";
import { headlessServiceName, servicesPodName } from "./names.ts";
import { childMetadata } from "./owner.ts";
import {
  commonPodOptions,
  imagePullSecrets,
  orderedPodSpec,
  podAnnotations,
  servicesPodAffinity,
  servicesPodLabels,
} from "./pod/pod.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import { userVolumes } from "./pod/volumes.ts";

/** The services pod, or undefined when the MiniCluster has no `spec.services`. */
export function buildServicesPod(mc: DefaultedMiniCluster): Pod | undefined {
  const services = mc.spec.services;
  if (services.length === 0) return undefined;
  const name = servicesPodName(mc);
  const metadata = childMetadata(mc, name);
  // The pod labels (selected by the headless Service) come with the child labels.
  metadata.labels = { ...servicesPodLabels(mc), ...metadata.labels };
  const containers = serviceContainers(mc);
  const annotations = podAnnotations(mc, containers);
  if (annotations) metadata.annotations = annotations;
  const volumes = userVolumes(services);
  // The services' own pull secrets, and the containers' ones the Go operator used here.
  const pullSecrets = imagePullSecrets([...services, ...mc.spec.containers]);
  const affinity = servicesPodAffinity(mc);
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata,
    spec: orderedPodSpec({
      hostname: name,
      subdomain: headlessServiceName(mc),
      setHostnameAsFQDN: false,
      ...commonPodOptions(mc),
      ...(affinity ? { affinity } : {}),
      ...(pullSecrets ? { imagePullSecrets: pullSecrets } : {}),
      containers,
      ...(volumes.length > 0 ? { volumes } : {}),
    }),
  };
}
