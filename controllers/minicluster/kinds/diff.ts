/**
 * Does an observed object already hold what we want it to hold?
 *
 * The reconciler writes a child only when this says no, so that reconciling an unchanged MiniCluster
 * costs zero writes. Two checks, because each alone is blind somewhere:
 *
 * 1. A structural "subset" comparison: every field of the desired object must be present with an
 *    equal value in the observed one. Fields the desired object does not mention (server defaults,
 *    other controllers' fields, status) are ignored, so the API server filling in
 *    `terminationMessagePath` or the Job controller adding labels never looks like drift. This
 *    catches someone else changing a field we own.
 * 2. A hash of the desired object, stored as an annotation when we apply it. The subset check cannot
 *    see a field we set earlier and now removed (a dropped label, a removed env var): the hash can.
 *
 * The comparison forgives what the API server does to a value without changing its meaning: zero
 * values (`false`, `0`, `""`, `{}`, `[]`) are dropped by `omitempty`, quantities are canonicalized
 * ("1000m" → "1"), and admission may append to some lists (a Pod's volumes and tolerations).
 */

/** Annotation holding the hash of the desired object the operator last applied. */
export const DESIRED_HASH_ANNOTATION = "flux-framework.org/desired-hash";

import { createHash } from "node:crypto";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";

type Json = unknown;

/**
 * The paths (dotted, with `[i]` or `[name=x]` for list items) where `observed` does not hold the
 * value `desired` asks for. Empty when the observed object already matches.
 */
export function differingPaths(observed: Json, desired: Json, path = ""): string[] {
  if (isZero(desired)) {
    // omitempty: the server drops zero values, so "absent" and "zero" are the same thing.
    return observed === undefined || observed === null || isZero(observed) ? [] : [path];
  }
  if (Array.isArray(desired)) {
    if (!Array.isArray(observed)) return [path];
    return differingLists(observed, desired, path);
  }
  if (isObject(desired)) {
    if (!isObject(observed)) return [path];
    const out: string[] = [];
    for (const [key, value] of Object.entries(desired)) {
      if (value === undefined) continue;
      out.push(...differingPaths(observed[key], value, path ? `${path}.${key}` : key));
    }
    return out;
  }
  if (observed === desired) return [];
  if (typeof desired === "string" && typeof observed === "string" && isQuantityPath(path)) {
    const a = parseQuantity(desired);
    const b = parseQuantity(observed);
    if (a !== undefined && b !== undefined && Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a))) {
      return [];
    }
  }
  return [path];
}

/**
 * Lists whose items all have a key (`mountPath` for volume mounts, where one volume may be mounted
 * twice, else `name`) are matched by that key: the server may append items of its own, such as a
 * Pod's service-account volume. Other lists go by position; the observed list may be longer
 * (admission appends default tolerations) but must hold every desired item in order.
 */
function differingLists(observed: Json[], desired: Json[], path: string): string[] {
  const key = listKey(desired);
  if (key) {
    const byKey = new Map<string, Json>();
    for (const o of observed) if (isObject(o) && typeof o[key] === "string") byKey.set(o[key], o);
    const out: string[] = [];
    for (const d of desired) {
      const k = (d as Record<string, string>)[key];
      const item = `${path}[${key}=${k}]`;
      const o = byKey.get(k);
      out.push(...(o === undefined ? [item] : differingPaths(o, d, item)));
    }
    // Order matters for containers (the first is the default for `kubectl exec`), so check it too.
    const wanted = new Set(desired.map((d) => (d as Record<string, string>)[key]));
    const order = observed.filter((o) => isObject(o) && wanted.has(o[key] as string));
    if (out.length === 0 && order.some((o, i) => !sameKey(o, desired[i], key))) out.push(path);
    return out;
  }
  if (observed.length < desired.length) return [path];
  const out: string[] = [];
  desired.forEach((d, i) => out.push(...differingPaths(observed[i], d, `${path}[${i}]`)));
  return out;
}

function listKey(desired: Json[]): string | undefined {
  for (const key of ["mountPath", "name"]) {
    if (desired.every((d) => isObject(d) && typeof d[key] === "string")) {
      const keys = desired.map((d) => (d as Record<string, string>)[key]);
      if (new Set(keys).size === keys.length) return key;
    }
  }
  return undefined;
}

function sameKey(a: Json, b: Json, key: string): boolean {
  return isObject(a) && isObject(b) && a[key] === b[key];
}

/** True when `observed` already matches `desired` field by field (check 1 above). */
export function matchesDesired(observed: Json, desired: Json): boolean {
  return differingPaths(observed, desired).length === 0;
}

/**
 * True when the observed child needs no write: it holds every desired field and was last applied
 * from this exact desired object (checks 1 and 2 above).
 */
export function upToDate(
  observed: { metadata?: ObjectMeta } | undefined,
  desired: { metadata?: ObjectMeta },
): boolean {
  if (!observed) return false;
  const want = desired.metadata?.annotations?.[DESIRED_HASH_ANNOTATION];
  if (want !== undefined && observed.metadata?.annotations?.[DESIRED_HASH_ANNOTATION] !== want) {
    return false;
  }
  return matchesDesired(observed, desired);
}

/**
 * Returns `desired` with the hash annotation set to the hash of `desired` itself (without the
 * annotation). Stable: the same desired object always gives the same hash, whatever its key order.
 */
export function withDesiredHash<T extends { metadata?: ObjectMeta }>(
  desired: T,
  texts?: CanonicalTexts,
): T {
  const hash = hashOf(desired, texts);
  return {
    ...desired,
    metadata: {
      ...desired.metadata,
      annotations: { ...desired.metadata?.annotations, [DESIRED_HASH_ANNOTATION]: hash },
    },
  };
}

/**
 * A short hex SHA-256 of the canonical JSON of a value (keys sorted, undefined dropped). Every
 * reconcile hashes every desired child, so this is synchronous: WebCrypto's promise per digest
 * cost more than the digest.
 */
export function hashOf(value: Json, texts?: CanonicalTexts): string {
  return createHash("sha256").update(canonicalJson(value, texts)).digest("hex").slice(0, 24);
}

/**
 * The canonical JSON of objects already written, by object: a value hashed twice in one build (the
 * Job's template, in its template hash and in the Job's) is written out once. Only for objects
 * that do not change between the hashes.
 */
export type CanonicalTexts = WeakMap<object, string>;

/**
 * JSON with object keys sorted, so that equal values always serialize the same way. The text is
 * exactly `JSON.stringify` of a copy whose objects have their keys inserted in sorted order (the
 * hashes on existing children were made that way), which puts array-index keys ("0", "12") first
 * in numeric order, as JavaScript enumerates them; written out directly, it allocates no copies.
 */
export function canonicalJson(value: Json, texts?: CanonicalTexts): string {
  return serialize(value, texts) ?? "undefined";
}

function serialize(v: unknown, texts?: CanonicalTexts): string | undefined {
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      return Number.isFinite(v) ? String(v) : "null";
    case "boolean":
      return v ? "true" : "false";
    case "object":
      break;
    default:
      return undefined; // undefined, functions and symbols: dropped (null in an array)
  }
  if (v === null) return "null";
  const written = texts?.get(v);
  if (written !== undefined) return written;
  const text = serializeObject(v, texts);
  if (text !== undefined) texts?.set(v, text);
  return text;
}

function serializeObject(v: object, texts?: CanonicalTexts): string | undefined {
  const toJSON = (v as { toJSON?: () => unknown }).toJSON;
  if (typeof toJSON === "function") return serialize(toJSON.call(v), texts);
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) out += (i ? "," : "") + (serialize(v[i], texts) ?? "null");
    return out + "]";
  }
  const o = v as Record<string, unknown>;
  let out = "{";
  let first = true;
  for (const k of sortedKeys(o)) {
    const s = serialize(o[k], texts);
    if (s === undefined) continue;
    out += (first ? "" : ",") + JSON.stringify(k) + ":" + s;
    first = false;
  }
  return out + "}";
}

const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;

function sortedKeys(o: Record<string, unknown>): string[] {
  const keys = Object.keys(o).sort();
  // Only a key that starts with a digit can be an array index.
  if (!keys.some(startsWithDigit)) return keys;
  // Array-index keys come first in numeric order, as they do in any object JavaScript enumerates.
  const indexes = keys.filter((k) => ARRAY_INDEX.test(k) && Number(k) < 4294967295);
  if (indexes.length === 0) return keys;
  const rest = keys.filter((k) => !(ARRAY_INDEX.test(k) && Number(k) < 4294967295));
  return [...indexes.sort((a, b) => Number(a) - Number(b)), ...rest];
}

function startsWithDigit(k: string): boolean {
  const c = k.charCodeAt(0);
  return c >= 48 && c <= 57;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isZero(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === "") return true;
  if (Array.isArray(v)) return v.length === 0;
  if (isObject(v)) return Object.values(v).every((x) => x === undefined);
  return false;
}

/** Resource quantities live under these keys; only there is "1000m" the same as "1". */
function isQuantityPath(path: string): boolean {
  return /(^|\.)(limits|requests|overhead|capacity|allocatable)\.|sizeLimit$/.test(path);
}

const SUFFIX: Record<string, number> = {
  "": 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The numeric value of a Kubernetes quantity ("1.5Gi", "250m", "1e3"), or undefined. */
export function parseQuantity(q: string): number | undefined {
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/.exec(
    q.trim(),
  );
  if (!m) return undefined;
  const base = Number(m[1]);
  if (m[2]) return base * 10 ** Number(m[2].slice(1));
  return base * SUFFIX[m[3] ?? ""];
}
