/**
 * The observable end state of one namespace, with everything that legitimately differs between two
 * runs masked, so "converged to the reference" is a plain deep equality.
 *
 * Kept: the MiniClusters (metadata the user or the operator set, spec, the settled parts of status)
 * and every object the operator labelled as its own (workspaces, ConfigMaps, Secrets, Services, Jobs without
 * their status). Dropped: objects being deleted (a foreground-deleted Job lingers on a control plane
 * without a garbage collector), pods (the Job controller's business), Events.
 * Masked: uids (also inside strings, e.g. the Job's controller-uid selector), resourceVersions,
 * timestamps, managedFields, generations, the namespace name, allocated cluster IPs, and the
 * generated CURVE certificate (compared separately: it must never change, not match a reference).
 */
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import {
  ConfigMaps,
  Jobs,
  type ResourceType,
  Secrets,
  Services,
} from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import { CURVE_DIGEST_ANNOTATION } from "../../controllers/minicluster/policy/curve_integrity.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
} from "../../controllers/minicluster/children/names.ts";

type Obj = { kind?: string; metadata?: ObjectMeta; [k: string]: unknown };

/** kind/name → masked object. */
export type Snapshot = Record<string, unknown>;

const KINDS: Array<[ResourceType, boolean]> = [
  [MiniClusters, false],
  [MiniClusterWorkspaces, true],
  [ConfigMaps, true],
  [Secrets, true],
  [Services, true],
  [Jobs, true],
];

/** Reads the namespace's state straight from the API server and masks it. */
export async function snapshot(client: KubeClient, namespace: string): Promise<Snapshot> {
  const raw: Obj[] = [];
  for (const [rt, managedOnly] of KINDS) {
    const list = await client.list<Obj>(rt, {
      namespace,
      labelSelector: managedOnly ? `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}` : undefined,
    });
    for (const item of list.items) raw.push({ ...item, kind: rt.kind });
  }
  return maskAll(raw.filter((o) => !o.metadata?.deletionTimestamp), namespace);
}

/** Pure: the masked snapshot of a set of objects (unit-testable). */
export function maskAll(objects: Obj[], namespace: string): Snapshot {
  const uids = new Set<string>();
  for (const o of objects) if (o.metadata?.uid) uids.add(o.metadata.uid);
  const out: Snapshot = {};
  const keys = objects.map((o) => `${o.kind}/${o.metadata?.name}`).sort();
  const byKey = new Map(objects.map((o) => [`${o.kind}/${o.metadata?.name}`, o]));
  for (const key of keys) {
    if (key in out) throw new Error(`duplicate object ${key}`);
    out[key] = maskStrings(maskObject(byKey.get(key)!), uids, namespace);
  }
  return out;
}

const DESIRED_HASH = "flux-framework.org/desired-hash";

const VOLATILE_METADATA = [
  "uid",
  "resourceVersion",
  "managedFields",
  "creationTimestamp",
  "generation",
  "namespace",
  "selfLink",
];

function maskObject(o: Obj): Obj {
  const copy = structuredClone(o) as Obj;
  const meta = (copy.metadata ?? {}) as Record<string, unknown>;
  for (const k of VOLATILE_METADATA) delete meta[k];
  // A hash of the whole desired object, namespace included: equal content gives a different hash
  // in another namespace. The content it stands for is compared field by field anyway.
  const annotations = meta.annotations as Record<string, string> | undefined;
  if (annotations?.[DESIRED_HASH]) annotations[DESIRED_HASH] = "<hash>";
  const owners = meta.ownerReferences as { uid?: string }[] | undefined;
  for (const ref of owners ?? []) delete ref.uid;
  delete copy.apiVersion;
  switch (o.kind) {
    case "MiniCluster":
      copy.status = settledStatus(o);
      break;
    case "Job":
      delete copy.status;
      break;
    case "Service": {
      const spec = copy.spec as Record<string, unknown> | undefined;
      if (spec && spec.clusterIP !== "None") {
        delete spec.clusterIP;
        delete spec.clusterIPs;
      }
      delete copy.status;
      break;
    }
    case "Secret":
      if (o.metadata?.name?.endsWith("-curve-cert") || isCurve(o)) {
        copy.data = Object.fromEntries(Object.keys(copy.data ?? {}).map((k) => [k, "<generated>"]));
        // The digest of a generated key differs from run to run like the key itself.
        const annotations = copy.metadata?.annotations;
        if (annotations?.[CURVE_DIGEST_ANNOTATION]) {
          annotations[CURVE_DIGEST_ANNOTATION] = "<generated>";
        }
      }
      break;
  }
  return copy;
}

function isCurve(o: Obj): boolean {
  return Object.keys((o.data as Record<string, string>) ?? {}).some((k) => k.includes("curve"));
}

/** What a converged MiniCluster's status says, without times and free-form messages. */
function settledStatus(o: Obj) {
  const status = (o as { status?: Record<string, unknown> }).status ?? {};
  const conditions = (status.conditions as Record<string, string>[] | undefined) ?? [];
  return {
    current: status.observedGeneration === o.metadata?.generation,
    size: status.size,
    maximumSize: status.maximumSize,
    conditions: conditions.map((c) => `${c.type}=${c.status}/${c.reason}`).sort(),
  };
}

function maskStrings(value: unknown, uids: Set<string>, namespace: string): unknown {
  if (typeof value === "string") {
    if (uids.has(value)) return "<uid>";
    return value.replaceAll(namespace, "<ns>");
  }
  if (Array.isArray(value)) return value.map((v) => maskStrings(v, uids, namespace));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[maskStrings(k, uids, namespace) as string] = maskStrings(v, uids, namespace);
    }
    return out;
  }
  return value;
}

/** Human-readable difference of two snapshots (for failure messages). */
export function describeDifference(want: Snapshot, got: Snapshot): string {
  const lines: string[] = [];
  for (const key of new Set([...Object.keys(want), ...Object.keys(got)])) {
    if (!(key in got)) lines.push(`missing ${key}`);
    else if (!(key in want)) lines.push(`unexpected ${key}`);
    else {
      const a = JSON.stringify(want[key]);
      const b = JSON.stringify(got[key]);
      if (a !== b) {
        lines.push(`differs ${key}:\n  want ${a.slice(0, 800)}\n  got  ${b.slice(0, 800)}`);
      }
    }
  }
  return lines.join("\n");
}
