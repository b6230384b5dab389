// The yardstick: the same child objects the operator creates for a MiniCluster, created by a bare
// client with the operator's concurrency — no caches, no status, no events. The operator's time
// as a ratio of this one says what its machinery costs on top of the writes themselves.

import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import { type MiniCluster, withDefaults } from "../api/mod.ts";
import type { KubeClient } from "../runtime/client.ts";
import { ConfigMaps, Jobs, type ResourceType, Secrets, Services } from "../runtime/resources.ts";
import { childrenInOrder, desiredChildren } from "../controllers/minicluster/desired.ts";
import { buildWorkspace } from "../controllers/minicluster/workspace.ts";
import {
  buildCurveSecret,
  curveMetadataFor,
  generateCurveCertificate,
} from "../controllers/minicluster/children/curve.ts";

type Obj = ConfigMap | Secret | Service | Job;

export interface ChildObject {
  rt: ResourceType;
  object: Obj;
}

/**
 * Every child the operator creates for `mc`, in its order: workspace, curve Secret, entrypoint
 * ConfigMap and Services, the Job. The certificate is generated here too, as the operator does.
 */
export async function childObjects(mc: MiniCluster): Promise<ChildObject[]> {
  const defaulted = withDefaults(mc);
  const size = defaulted.spec.size;
  const maxSize = defaulted.spec.maxSize || size;
  const desired = await desiredChildren(defaulted, { size, maxSize });
  const out: ChildObject[] = [
    { rt: ConfigMaps, object: buildWorkspace(mc, { maxSize, size }) },
  ];
  if (!desired.curveSecret) {
    const cert = await generateCurveCertificate(curveMetadataFor(defaulted));
    out.push({ rt: Secrets, object: buildCurveSecret(defaulted, cert.text) });
  }
  for (const c of childrenInOrder(desired)) {
    out.push({
      rt: c.kind === "ConfigMap" ? ConfigMaps : c.kind === "Secret" ? Secrets : Services,
      object: c.object as Obj,
    });
  }
  out.push({ rt: Jobs, object: desired.job });
  return out;
}

/** Without owners (nothing to own them here) and, for the Job, suspended: no pods to clean up. */
function standalone(c: ChildObject): ChildObject {
  const { ownerReferences: _, ...metadata } = c.object.metadata ?? {};
  const object = { ...c.object, metadata } as Obj;
  if (c.rt === Jobs) (object as Job).spec = { ...(object as Job).spec!, suspend: true };
  return { rt: c.rt, object };
}

/**
 * Creates the children of every MiniCluster with `concurrency` workers, each handling one
 * MiniCluster at a time and creating its children one after the other (as a reconcile does).
 * Resolves the elapsed milliseconds.
 */
export async function rawCreates(
  client: KubeClient,
  miniClusters: readonly MiniCluster[],
  concurrency: number,
): Promise<{ ms: number; objects: number }> {
  let next = 0;
  let objects = 0;
  const t0 = performance.now();
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= miniClusters.length) return;
      for (const c of await childObjects(miniClusters[i])) {
        const s = standalone(c);
        await client.create(s.rt, s.object);
        objects++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { ms: performance.now() - t0, objects };
}
