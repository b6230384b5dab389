/**
 * The Kubernetes resource types the operator talks to, and how their REST paths are built.
 *
 * A `ResourceType` is the minimum needed to address a kind on the API server without discovery:
 * the operator only ever handles a fixed, known set of kinds, so a discovery round-trip at start-up
 * would only add latency and a failure mode.
 */

export interface ResourceType {
  /** API group; "" for the core group. */
  group: string;
  version: string;
  /** The lower-case plural used in URLs ("configmaps"). */
  plural: string;
  kind: string;
  namespaced: boolean;
  /**
   * The file of this repository whose CustomResourceDefinition defines the kind (operator-defined
   * kinds only), so that an API server without it can be answered with what to apply.
   */
  definedIn?: string;
}

export function resourceType(
  group: string,
  version: string,
  plural: string,
  kind: string,
  namespaced: boolean,
  definedIn?: string,
): ResourceType {
  return Object.freeze({
    group,
    version,
    plural,
    kind,
    namespaced,
    ...(definedIn === undefined ? {} : { definedIn }),
  });
}

export const ConfigMaps = resourceType("", "v1", "configmaps", "ConfigMap", true);
export const Secrets = resourceType("", "v1", "secrets", "Secret", true);
export const Services = resourceType("", "v1", "services", "Service", true);
export const Pods = resourceType("", "v1", "pods", "Pod", true);
export const Events = resourceType("", "v1", "events", "Event", true);
export const ServiceAccounts = resourceType("", "v1", "serviceaccounts", "ServiceAccount", true);
export const PersistentVolumeClaims = resourceType(
  "",
  "v1",
  "persistentvolumeclaims",
  "PersistentVolumeClaim",
  true,
);
export const Namespaces = resourceType("", "v1", "namespaces", "Namespace", false);
export const Nodes = resourceType("", "v1", "nodes", "Node", false);
export const Jobs = resourceType("batch", "v1", "jobs", "Job", true);
export const Leases = resourceType("coordination.k8s.io", "v1", "leases", "Lease", true);
export const CustomResourceDefinitions = resourceType(
  "apiextensions.k8s.io",
  "v1",
  "customresourcedefinitions",
  "CustomResourceDefinition",
  false,
);

/** The `apiVersion` field of objects of this type: "v1" for the core group, else "group/version". */
export function apiVersionOf(rt: ResourceType): string {
  return rt.group === "" ? rt.version : `${rt.group}/${rt.version}`;
}

/** A stable human-readable name for the type, used in metrics labels and logs ("jobs.batch"). */
export function resourceName(rt: ResourceType): string {
  return rt.group === "" ? rt.plural : `${rt.plural}.${rt.group}`;
}

export interface ResourcePathOptions {
  /** Namespace of a namespaced type; omitted means "all namespaces" (collection paths only). */
  namespace?: string;
  name?: string;
  /** "status", "scale", ... (requires `name`). */
  subresource?: string;
}

/**
 * The REST path of a collection, an object or a subresource, without query string:
 * `/api/v1/namespaces/ns/configmaps/name`, `/apis/batch/v1/jobs` (all namespaces), ...
 */
export function resourcePath(rt: ResourceType, opts: ResourcePathOptions = {}): string {
  const { namespace, name, subresource } = opts;
  if (subresource !== undefined && name === undefined) {
    throw new Error(`resourcePath: subresource "${subresource}" needs a name`);
  }
  if (!rt.namespaced && namespace !== undefined && namespace !== "") {
    throw new Error(`resourcePath: ${rt.kind} is cluster-scoped, got namespace "${namespace}"`);
  }
  const parts = [rt.group === "" ? "/api" : `/apis/${rt.group}`, rt.version];
  if (rt.namespaced && namespace) parts.push("namespaces", encodeURIComponent(namespace));
  parts.push(rt.plural);
  if (name !== undefined) {
    if (name === "") throw new Error(`resourcePath: empty name for ${rt.kind}`);
    parts.push(encodeURIComponent(name));
  }
  if (subresource !== undefined) parts.push(subresource);
  return parts.join("/");
}
