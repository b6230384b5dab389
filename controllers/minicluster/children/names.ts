/**
 * Names and labels of every child of a MiniCluster, in one place so that the builders, the
 * reconciler (which finds children in the cache) and the watch label selectors agree.
 */

/** Label every object the operator creates carries; the operator caches only objects with it. */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY_VALUE = "minicluster-operator";
/** Names the owning MiniCluster on children and on pods (pods are owned by the Job, not by us). */
export const MINICLUSTER_LABEL = "flux-framework.org/minicluster";
/** Go Flux Operator parity: pods carry app.kubernetes.io/name=<name>. */
export const APP_NAME_LABEL = "app.kubernetes.io/name";
/** Go Flux Operator parity: the scale subresource's selector is hpa-selector=<name>. */
export const HPA_SELECTOR_LABEL = "hpa-selector";
/** Set by the Job controller on Indexed Job pods; index 0 is the lead broker. */
export const COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index";
/** Set by the Job controller on every pod of a Job. */
export const JOB_NAME_LABEL = "job-name";
/** Flux broker port. */
export const BROKER_PORT = 8050;
/** The finalizer that runs manual cleanup before a MiniCluster goes away. */
export const FINALIZER = "flux-framework.org/cleanup";
/** The one field manager of every server-side apply. */
export const FIELD_MANAGER = "minicluster-operator";

interface Named {
  metadata?: { name?: string };
  spec?: { network?: { headlessName?: string } };
}

function nameOf(mc: Named): string {
  const name = mc.metadata?.name;
  if (!name) throw new Error("MiniCluster has no metadata.name");
  return name;
}

export const jobName = (mc: Named): string => nameOf(mc);
export const headlessServiceName = (mc: Named): string =>
  mc.spec?.network?.headlessName || nameOf(mc);
export const entrypointConfigMapName = (mc: Named): string => `${nameOf(mc)}-entrypoint`;
export const curveSecretName = (mc: Named): string => `${nameOf(mc)}-curve-cert`;
/** The Flux containers' entrypoint volume (scripts and certificate), named after the Secret. */
export const fluxEntrypointVolumeName = curveSecretName;
/** The view image's volume when the pods mount it (pod/volumes.ts viewImageMounts). */
export const VIEW_IMAGE_VOLUME = "flux-view-image";
export const servicesPodName = (mc: Named): string => `${nameOf(mc)}-services`;
/** The gang's PodGroup (spec.gang). */
export const podGroupName = (mc: Named): string => nameOf(mc);
/**
 * The workspace: a ConfigMap with the MiniCluster's own name, owned by it, that holds what must be
 * remembered between reconciles (the size the brokers were bootstrapped with; workspace.ts).
 */
export const workspaceName = (mc: Named): string => nameOf(mc);
/**
 * A non-Flux container with ports gets its own Service. The Go operator names it after the
 * container alone, so two MiniClusters with a container "db" collide; we prefix the MiniCluster.
 */
export const containerServiceName = (mc: Named, containerName: string): string =>
  `${nameOf(mc)}-${containerName}`;

/** Pod hostname of Job index i: `<jobName>-<i>`. */
export const podHostname = (mc: Named, index: number): string => `${jobName(mc)}-${index}`;

/** Labels on every child object. */
export function childLabels(mc: Named): Record<string, string> {
  return { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [MINICLUSTER_LABEL]: nameOf(mc) };
}

/** Labels on every pod of the Job (and the services pod), also used to select them. */
export function podLabels(mc: Named): Record<string, string> {
  return { ...childLabels(mc), [APP_NAME_LABEL]: nameOf(mc), [HPA_SELECTOR_LABEL]: nameOf(mc) };
}

/** The scale subresource's selector (status.selector), Go operator parity. */
export const scaleSelector = (mc: Named): string => `${HPA_SELECTOR_LABEL}=${nameOf(mc)}`;
