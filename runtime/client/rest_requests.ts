/**
 * How the verbs of the client contract become REST requests: query strings, the content types of
 * patches and applies, and the type meta, name and namespace an object must carry.
 */
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import type { CallOptions, ListOptions, PatchType, WriteOptions } from "./api_client.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import { printableJson } from "./wire/json_text.ts";

export const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
};
export const APPLY_CONTENT_TYPE = "application/apply-patch+yaml";

/**
 * An apply body: JSON (which is YAML) in which every character YAML cannot carry raw is a
 * `\uXXXX` escape (`printableJson`), since the apiserver decodes apply-patch+yaml as YAML.
 */
export const applyBody = (obj: unknown): string => printableJson(obj);

/** Objects as far as the client needs to see them; models stay generic for callers. */
interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

export function listQuery(opts: ListOptions): Record<string, string | number | undefined> {
  return {
    labelSelector: opts.labelSelector || undefined,
    fieldSelector: opts.fieldSelector || undefined,
    limit: opts.limit,
    continue: opts.continue || undefined,
    resourceVersion: opts.resourceVersion,
    resourceVersionMatch: opts.resourceVersionMatch,
  };
}

export function callOptions(opts: CallOptions): CallOptions {
  return { signal: opts.signal, timeoutMs: opts.timeoutMs, priority: opts.priority };
}

export function writeQuery(opts: WriteOptions): Record<string, string | undefined> {
  return {
    fieldManager: opts.fieldManager,
    dryRun: opts.dryRun ? "All" : undefined,
    fieldValidation: opts.fieldValidation,
  };
}

/**
 * `?k=v&...` of the defined values, each part percent-encoded (the API server decodes `%20` and
 * `+` alike). Written out rather than through URLSearchParams: every request makes one, and the
 * object and its ops cost more than the few strings.
 */
export function queryString(query?: Record<string, string | number | boolean | undefined>): string {
  if (!query) return "";
  let s = "";
  for (const k in query) {
    const v = query[k];
    if (v === undefined) continue;
    s += `${s === "" ? "?" : "&"}${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`;
  }
  return s;
}

export function withTypeMeta<T>(rt: ResourceType, obj: T): T & KubeObject {
  const o = obj as T & KubeObject;
  return { ...o, apiVersion: o.apiVersion ?? apiVersionOf(rt), kind: o.kind ?? rt.kind };
}

export function nameOf(obj: KubeObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error("object has no metadata.name");
  return name;
}

export function namespaceOf(rt: ResourceType, obj: KubeObject): string | undefined {
  if (!rt.namespaced) return undefined;
  const ns = obj.metadata?.namespace;
  if (!ns) throw new Error(`${rt.kind} ${obj.metadata?.name ?? ""} has no metadata.namespace`);
  return ns;
}
