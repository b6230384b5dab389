// The yardstick: the benchmark's operator run without the operator. The same MiniClusters are
// created the same way, and the same child objects the operator would create for them are created
// by a bare client with the operator's concurrency — no caches, no finalizer, no status, no events.
// The Jobs are real (owned, not suspended), so the Job controller, scheduler and KWOK load the
// apiserver with the same pods as during the operator's run. The operator's time as a ratio of this
// one says what its machinery costs on top of the writes themselves.

import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import { type MiniCluster, withDefaults } from "../api/mod.ts";
import type { KubeClient } from "../runtime/client/client.ts";
import { Jobs, type ResourceType, Secrets } from "../runtime/client/resources.ts";
import { MiniClusters } from "../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../api/workspace.ts";
import { childrenInOrder } from "../controllers/minicluster/kinds/child_kinds.ts";
import { desiredChildren } from "../controllers/minicluster/kinds/desired.ts";
import { specSizing } from "../controllers/minicluster/children/sizing.ts";
import { buildWorkspace, workspaceAt } from "../controllers/minicluster/workspace/workspace.ts";
import {
  buildCurveSecret,
  curveMetadataFor,
  generateCurveCertificate,
} from "../controllers/minicluster/children/curve.ts";

type Obj = MiniClusterWorkspace | ConfigMap | Secret | Service | Job;

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
  const sizing = specSizing(defaulted);
  const desired = await desiredChildren(defaulted, sizing);
  const out: ChildObject[] = [
    { rt: MiniClusterWorkspaces, object: buildWorkspace(mc, workspaceAt(sizing)) },
  ];
  if (!desired.curveSecret) {
    const cert = await generateCurveCertificate(curveMetadataFor(defaulted));
    out.push({ rt: Secrets, object: buildCurveSecret(defaulted, cert.text) });
  }
  for (const c of childrenInOrder(desired)) {
    out.push({ rt: c.rt, object: c.object as Obj });
  }
  out.push({ rt: Jobs, object: desired.job });
  return out;
}

/** Hands created MiniClusters to the workers in creation order (the operator's queue is FIFO too). */
class Handoff<T> {
  readonly #items: T[] = [];
  readonly #waiting: ((item: T | undefined) => void)[] = [];
  #closed = false;

  put(item: T): void {
    const w = this.#waiting.shift();
    if (w) w(item);
    else this.#items.push(item);
  }

  /** No more items: waiting and later takers get undefined once the queue is drained. */
  close(): void {
    this.#closed = true;
    for (const w of this.#waiting.splice(0)) w(undefined);
  }

  take(): Promise<T | undefined> {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift());
    if (this.#closed) return Promise.resolve(undefined);
    return new Promise((r) => this.#waiting.push(r));
  }
}

export interface RawRun {
  /** performance.now() when the first MiniCluster create was sent. */
  t0: number;
  /** From t0 to the last MiniCluster create returning. */
  miniClustersMs: number;
  /** From t0 to the last child create returning. */
  ms: number;
  /** Children created. */
  objects: number;
}

/**
 * The operator's run without the operator: creates `miniClusters` (nobody reconciles them) with
 * `createConcurrency` requests in flight, as the benchmark does for the operator, and hands each one,
 * as its create returns with the real uid, to `concurrency` workers. A worker takes one
 * MiniCluster at a time and creates its children one after the other (as a reconcile does), exactly
 * as the operator's builders make them: owned by the MiniCluster, the Job not suspended, so the Job
 * controller, the scheduler and KWOK make and run the same pods as in the operator's run.
 */
export async function rawCreates(
  client: KubeClient,
  miniClusters: readonly MiniCluster[],
  opts: { createConcurrency: number; concurrency: number },
): Promise<RawRun> {
  const handoff = new Handoff<MiniCluster>();
  let failed = false;
  let next = 0;
  let objects = 0;
  let miniClustersDone = 0;
  let childrenDone = 0;
  const t0 = performance.now();
  const creator = async () => {
    while (!failed && next < miniClusters.length) {
      handoff.put(await client.create(MiniClusters, miniClusters[next++]));
    }
  };
  const worker = async () => {
    for (;;) {
      const mc = await handoff.take();
      if (!mc || failed) return;
      for (const c of await childObjects(mc)) {
        await client.create(c.rt, c.object);
        objects++;
      }
      childrenDone = performance.now();
    }
  };
  const creators = Promise.all(
    Array.from({ length: Math.max(1, opts.createConcurrency) }, creator),
  ).then(() => miniClustersDone = performance.now()).finally(() => handoff.close());
  const workers = Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, worker));
  try {
    await Promise.all([creators, workers]);
  } catch (e) {
    failed = true;
    handoff.close();
    throw e;
  }
  return { t0, miniClustersMs: miniClustersDone - t0, ms: childrenDone - t0, objects };
}
