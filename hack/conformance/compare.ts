/**
 * Pure comparison of what the two operators made of one manifest: normalise every child (what the
 * cluster or chance decides: uids, versions, timestamps, generated names, key material, the
 * namespace, the order of lists built from maps), pair the children by name, and list each leaf
 * where they differ. Script contents are not compared as text here (they are bound to differ):
 * `behaviour.ts` runs them and compares what they do.
 */

/** One difference between the Go operator's result and ours. */
export interface Difference {
  manifest: string;
  /**
   * admission: one CRD refused the manifest; object: a child only one side made; field: a leaf of
   * a paired child; behaviour: what a container's scripts did in the sandbox.
   */
  kind: "admission" | "object" | "field" | "behaviour";
  /** `Kind/name` of the child (ours' name when they differ), or "" for admission. */
  object: string;
  /** Dotted path, lists by `[name=x]` where items have names, else `[i]`; "" for a whole object. */
  path: string;
  /** undefined: absent on that side. */
  go: unknown;
  ours: unknown;
}

export interface Context {
  manifest: string;
  /** The MiniCluster's name (both sides use the manifest's). */
  name: string;
  goNamespace: string;
  oursNamespace: string;
}

type Json = unknown;
type Obj = Record<string, Json>;

const isObject = (v: Json): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

/** Placeholder for the namespace, which differs between the sides by construction. */
export const NAMESPACE = "<namespace>";

const METADATA_DROPPED = [
  "uid",
  "resourceVersion",
  "creationTimestamp",
  "generation",
  "managedFields",
  "selfLink",
];

/** Fields whose `{}` is the same as absent (not `emptyDir`, where `{}` is the volume). */
const EMPTY_MEANS_UNSET = new Set(["securityContext", "lifecycle", "resources"]);
/** Pod fields whose `false` is Kubernetes' default. */
const FALSE_MEANS_UNSET = new Set(["shareProcessNamespace", "hostIPC", "hostPID", "hostNetwork"]);

/** Labels whose values the cluster assigns (the Job controller's uid labels). */
const UID_LABELS = new Set(["controller-uid", "batch.kubernetes.io/controller-uid"]);

/** A CURVE certificate with the key material and comments left out (they differ every time). */
export function normaliseCertificate(text: string): string {
  return text.split("\n")
    .map((line) => line.replace(/\s+$/, ""))
    .filter((line) => line.trim() !== "" && !line.trim().startsWith("#"))
    .map((line) =>
      line
        .replace(/^(\s*public-key\s*=\s*)"[^"]*"/, '$1"<public-key>"')
        .replace(/^(\s*secret-key\s*=\s*)"[^"]*"/, '$1"<secret-key>"')
        .replace(/^\s+/, "    ")
    )
    .join("\n");
}

const looksLikeCertificate = (text: string) => /^\s*secret-key\s*=/m.test(text);

function decodeBase64(text: string): string {
  return new TextDecoder().decode(Uint8Array.from(atob(text), (c) => c.charCodeAt(0)));
}

/**
 * A child as both sides can be compared: cluster-assigned fields gone, the namespace replaced,
 * lists of named items keyed by name (the Go operator builds env, volumes and mounts from Go maps,
 * whose order is random), scripts replaced by a placeholder, certificates normalised.
 */
export function normalise(obj: Obj, namespace: string): Obj {
  const out = structuredClone(obj) as Obj;
  delete out.status;
  const metadata = (out.metadata ?? {}) as Obj;
  for (const key of METADATA_DROPPED) delete metadata[key];
  if (Array.isArray(metadata.ownerReferences)) {
    for (const ref of metadata.ownerReferences as Obj[]) delete ref.uid;
  }
  out.metadata = metadata;
  if (out.kind === "Service" && isObject(out.spec)) {
    const spec = out.spec;
    // Assigned by the apiserver from the service range (a headless Service says "None").
    if (spec.clusterIP !== "None") {
      delete spec.clusterIP;
      delete spec.clusterIPs;
    }
  }
  if (out.kind === "ConfigMap" && isObject(out.data)) {
    out.data = Object.fromEntries(
      Object.entries(out.data).map(([k, v]) => [
        k,
        typeof v === "string" && looksLikeCertificate(v)
          ? normaliseCertificate(v)
          : typeof v === "string" && v.startsWith("#!")
          ? "<script>"
          : v,
      ]),
    );
  }
  if (out.kind === "Secret" && isObject(out.data)) {
    out.data = Object.fromEntries(
      Object.entries(out.data).map(([k, v]) => {
        const text = typeof v === "string" ? decodeBase64(v) : "";
        return [k, looksLikeCertificate(text) ? normaliseCertificate(text) : "<secret data>"];
      }),
    );
  }
  return walk(out, namespace) as Obj;
}

function walk(value: Json, namespace: string, key = ""): Json {
  if (typeof value === "string") {
    // The namespace is a whole DNS label wherever it appears (FQDNs, ownerless references).
    return value.replace(
      new RegExp(`(?<![a-z0-9-])${escape(namespace)}(?![a-z0-9-])`, "g"),
      NAMESPACE,
    );
  }
  if (Array.isArray(value)) return value.map((v) => walk(v, namespace));
  if (!isObject(value)) return value;
  const out: Obj = {};
  for (const [k, v] of Object.entries(value)) {
    if ((key === "labels" || key === "matchLabels") && UID_LABELS.has(k)) {
      out[k] = "<uid>";
      continue;
    }
    out[k] = walk(v, namespace, k);
  }
  // Zero values that mean the same as leaving the field out (Go's structs serialise them).
  for (const [k, v] of Object.entries(out)) {
    if (EMPTY_MEANS_UNSET.has(k) && isObject(v) && Object.keys(v).length === 0) delete out[k];
    if (FALSE_MEANS_UNSET.has(k) && v === false) delete out[k];
  }
  // The ServiceAccount admission plugin's token volume has a random suffix.
  if (typeof out.name === "string" && /^kube-api-access-[a-z0-9]{5}$/.test(out.name)) {
    out.name = "kube-api-access-<random>";
  }
  return out;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Ways list items may be told apart, most specific first. */
const LIST_KEYS: { label: string; of: (o: Obj) => unknown }[] = [
  { label: "name", of: (o) => o.name },
  {
    label: "name,mountPath",
    of: (o) => o.name === undefined ? undefined : `${o.name},${o.mountPath}`,
  },
  { label: "containerPort", of: (o) => o.containerPort },
  { label: "port", of: (o) => o.port },
];

/** The key both lists' items can be matched by (every item has a distinct one), if any. */
function listKey(a: Json[], b: Json[]): ((item: Obj) => string) | undefined {
  const all = [...a, ...b];
  if (a.length === 0 || b.length === 0 || !all.every(isObject)) return undefined;
  const distinct = (items: Obj[], of: (o: Obj) => unknown) => {
    const values = items.map(of);
    return values.every((v) => v !== undefined && v !== "undefined,undefined") &&
      new Set(values.map(String)).size === values.length;
  };
  for (const { label, of } of LIST_KEYS) {
    if (distinct(a as Obj[], of) && distinct(b as Obj[], of)) {
      return (o) => `${label}=${of(o)}`;
    }
  }
  return undefined;
}

/** Leaf paths where `go` and `ours` differ. Lists of scalars are compared as one value. */
export function diffValues(
  go: Json,
  ours: Json,
  path = "",
): { path: string; go: Json; ours: Json }[] {
  if (isObject(go) && isObject(ours)) {
    const keys = [...new Set([...Object.keys(go), ...Object.keys(ours)])].sort();
    return keys.flatMap((k) => diffValues(go[k], ours[k], path ? `${path}.${k}` : k));
  }
  if (Array.isArray(go) && Array.isArray(ours)) {
    const key = listKey(go, ours);
    if (key) {
      const goBy = new Map((go as Obj[]).map((o) => [key(o), o]));
      const oursBy = new Map((ours as Obj[]).map((o) => [key(o), o]));
      const keys = [...new Set([...goBy.keys(), ...oursBy.keys()])];
      const out = keys.flatMap((k) => diffValues(goBy.get(k), oursBy.get(k), `${path}[${k}]`));
      // Containers run in their order (and the first is kubectl's default): compare it too.
      const order = (keysOf: string[], other: Map<string, Obj>) =>
        keysOf.filter((k) => other.has(k));
      const goOrder = order([...goBy.keys()], oursBy);
      const oursOrder = order([...oursBy.keys()], goBy);
      if (/containers$/i.test(path) && goOrder.join() !== oursOrder.join()) {
        out.push({ path: `${path}(order)`, go: goOrder, ours: oursOrder });
      }
      return out;
    }
    if (go.length === ours.length && go.some((v) => isObject(v) || Array.isArray(v))) {
      return go.flatMap((v, i) => diffValues(v, ours[i], `${path}[${i}]`));
    }
  }
  return equal(go, ours) ? [] : [{ path, go, ours }];
}

function equal(a: Json, b: Json): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

export function sortKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys(value[k])]));
}

const id = (o: Obj) => `${o.kind}/${(o.metadata as Obj | undefined)?.name}`;

/**
 * Pairs the children of both sides by kind and name. A Go per-container Service is named after the
 * container; ours `<name>-<container>`: a Go Service with no namesake pairs with ours of that name.
 */
export function pairChildren(
  go: Obj[],
  ours: Obj[],
  name: string,
): { pairs: [Obj, Obj][]; goOnly: Obj[]; oursOnly: Obj[] } {
  const oursBy = new Map(ours.map((o) => [id(o), o]));
  const pairs: [Obj, Obj][] = [];
  const goOnly: Obj[] = [];
  for (const g of go) {
    let match = oursBy.get(id(g));
    if (!match && g.kind === "Service") {
      match = oursBy.get(`Service/${name}-${(g.metadata as Obj).name}`);
    }
    if (match) {
      pairs.push([g, match]);
      oursBy.delete(id(match));
    } else {
      goOnly.push(g);
    }
  }
  return { pairs, goOnly, oursOnly: [...oursBy.values()] };
}

/** Every structural difference between the children of one manifest. */
export function compareChildren(ctx: Context, go: Obj[], ours: Obj[]): Difference[] {
  const goN = go.map((o) => normalise(o, ctx.goNamespace));
  const oursN = ours.map((o) => normalise(o, ctx.oursNamespace));
  const { pairs, goOnly, oursOnly } = pairChildren(goN, oursN, ctx.name);
  const out: Difference[] = [];
  for (const o of goOnly) {
    out.push({
      manifest: ctx.manifest,
      kind: "object",
      object: id(o),
      path: "",
      go: o,
      ours: undefined,
    });
  }
  for (const o of oursOnly) {
    out.push({
      manifest: ctx.manifest,
      kind: "object",
      object: id(o),
      path: "",
      go: undefined,
      ours: o,
    });
  }
  for (const [g, o] of pairs) {
    for (const d of diffValues(g, o)) {
      out.push({ manifest: ctx.manifest, kind: "field", object: id(o), ...d });
    }
  }
  return out;
}
