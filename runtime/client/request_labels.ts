/**
 * What a request is reported as (`api_requests_total{verb,resource,code}`): the verb as the API
 * server names it in its own metrics, and the resource with its group and subresource.
 */
import { resourceName, type ResourceType } from "./resources.ts";

/** Verbs as the API server names them in its own metrics (apiserver_request_total). */
export type Verb =
  | "get"
  | "list"
  | "watch"
  | "create"
  | "update"
  | "patch"
  | "apply"
  | "delete"
  | "deletecollection";

/** One finished request, for metrics. `code` is 0 when no HTTP response arrived. */
export interface RequestEvent {
  verb: Verb;
  /** "configmaps", "jobs.batch", "leases.coordination.k8s.io", "<plural>.<group>/status", ... */
  resource: string;
  code: number;
  /** Time to the response headers (for watches: time to establish the stream). */
  seconds: number;
}

/** Metrics labels for a request made through `request()` without explicit ones. */
export function describeRequest(
  method: string,
  path: string,
  opts: {
    verb?: Verb;
    resource?: string;
    query?: Record<string, unknown>;
    /** A server-side apply (a PATCH with the apply content type). */
    apply?: boolean;
  },
): { verb: Verb; resource: string } {
  // The client's own calls name both: no path to parse on every request.
  if (opts.verb && opts.resource !== undefined) return { verb: opts.verb, resource: opts.resource };
  const parsed = parseResourcePath(path);
  const resource = opts.resource ?? parsed.resource;
  if (opts.verb) return { verb: opts.verb, resource };
  switch (method.toUpperCase()) {
    case "GET":
      if (opts.query?.watch) return { verb: "watch", resource };
      return { verb: parsed.named ? "get" : "list", resource };
    case "POST":
      return { verb: "create", resource };
    case "PUT":
      return { verb: "update", resource };
    case "PATCH":
      return { verb: opts.apply ? "apply" : "patch", resource };
    case "DELETE":
      return { verb: parsed.named ? "delete" : "deletecollection", resource };
    default:
      return { verb: "get", resource };
  }
}

/** `/apis/batch/v1/namespaces/ns/jobs/x/status` → `{ resource: "jobs.batch/status", named }`. */
function parseResourcePath(path: string): { resource: string; named: boolean } {
  const segs = path.split("?")[0].split("/").filter((s) => s !== "");
  let rest: string[];
  let group = "";
  if (segs[0] === "api") rest = segs.slice(2);
  else if (segs[0] === "apis") {
    group = segs[1] ?? "";
    rest = segs.slice(3);
  } else return { resource: "", named: false };
  // "namespaces/<ns>/<plural>..." unless the path is about a Namespace object itself
  if (rest[0] === "namespaces" && rest.length > 2) rest = rest.slice(2);
  const [plural = "", name, sub] = rest;
  const base = group ? `${plural}.${group}` : plural;
  return { resource: sub ? `${base}/${sub}` : base, named: name !== undefined };
}

/** `resourceName` with an optional subresource suffix, as reported to `onRequest`. */
export function resourceNameWithSub(rt: ResourceType, subresource?: string): string {
  return subresource ? `${resourceName(rt)}/${subresource}` : resourceName(rt);
}
