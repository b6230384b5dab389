/**
 * Crash at every write, in the manner of Sieve's intermediate-state testing: for each reconcile
 * path, a reference run counts the operator's writes (N) and records the end state; then plan i
 * (1 ≤ i ≤ N) runs the same path, freezes the proxy the moment the i-th write has gone through (so
 * the apiserver holds exactly the state after that write), SIGKILLs the operator process, starts a
 * fresh one and checks that it converges to the reference end state:
 *
 * - the masked snapshot equals the reference (no missing, extra or different child);
 * - children that existed before the change keep their uid (nothing was deleted and re-created);
 * - the CURVE certificate is the one first created, never regenerated;
 * - for the delete path the MiniCluster is gone (its finalizer was removed);
 * - every DELETE carried a uid precondition and every finalizer edit a resourceVersion.
 */
import assert from "node:assert/strict";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { Secrets } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { eventually } from "../harness.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";
import type { OperatorProcess } from "../../testing/operator_process.ts";
import { FaultProxy } from "./proxy.ts";
import { describeDifference, type Snapshot, snapshot } from "./snapshot.ts";
import {
  assertGuardedWrites,
  type PlanResult,
  pool,
  quiesce,
  settle,
  startOperator,
  uidsOf,
  withNamespace,
} from "./env.ts";

const MC = "crashy";

/** A MiniCluster as the paths use it; pods keep running on KWOK so the end state is stable. */
export function faultMiniCluster(
  namespace: string,
  spec: Partial<MiniCluster["spec"]> = {},
  name = MC,
): MiniCluster {
  return sampleMiniCluster(name, namespace, {
    maxSize: 4,
    pod: { annotations: { "kwok.x-k8s.io/keep-running": "true" } },
    ...spec,
  });
}

interface PathContext {
  client: KubeClient;
  namespace: string;
}

/** One reconcile path: a setup that is left to converge, then the change whose writes are cut. */
export interface ReconcilePath {
  name: string;
  setup(ctx: PathContext): Promise<void>;
  act(ctx: PathContext): Promise<void>;
}

const create = (ctx: PathContext, spec?: Partial<MiniCluster["spec"]>) =>
  ctx.client.create(MiniClusters, faultMiniCluster(ctx.namespace, spec));
const patch = (ctx: PathContext, spec: Record<string, unknown>) =>
  ctx.client.patch(MiniClusters, ctx.namespace, MC, { spec }, "merge");

export const PATHS: ReconcilePath[] = [
  {
    name: "create",
    setup: async () => {},
    act: async (ctx) => void await create(ctx),
  },
  {
    name: "update",
    setup: async (ctx) => void await create(ctx),
    // Script (ConfigMap), mutable Job fields and Job labels change; the running Job is kept.
    act: async (ctx) =>
      void await patch(ctx, {
        logging: { quiet: true },
        tasks: 2,
        deadlineSeconds: 3600,
        jobLabels: { team: "b" },
      }),
  },
  {
    name: "scale",
    setup: async (ctx) => void await create(ctx),
    act: async (ctx) => void await patch(ctx, { size: 3 }),
  },
  {
    name: "invalid-to-valid",
    // Valid for the CRD, refused by the operator: volume "data" defined twice, differently.
    setup: async (ctx) =>
      void await create(ctx, {
        containers: [
          {
            image: "app",
            command: "hostname",
            runFlux: true,
            volumes: { data: { path: "/data", emptyDir: true } },
          },
          { name: "side", image: "app", volumes: { data: { path: "/data", claimName: "pvc" } } },
        ],
      } as Partial<MiniCluster["spec"]>),
    act: async (ctx) =>
      void await patch(ctx, {
        containers: [{ image: "ghcr.io/rse-ops/accounting:app-latest", command: "hostname" }],
      }),
  },
  {
    name: "delete",
    setup: async (ctx) => void await create(ctx),
    act: async (ctx) => void await ctx.client.delete(MiniClusters, ctx.namespace, MC),
  },
];

interface RunOutcome {
  /** Successful writes of the operator from the change on (the reference run's N). */
  writes: number;
  end: Snapshot;
  /** Whether the operator was killed (false when the run wrote fewer than `crashAt` times). */
  killed: boolean;
}

/** How long a restarted operator may take to converge. */
const CONVERGE_MS = 30_000;

/**
 * One run of `path`: the reference run without `crashAt`, plan `crashAt` with it. Throws with a
 * description when the end state is not the reference or an invariant breaks.
 */
async function runPath(
  client: KubeClient,
  kubeconfig: string,
  path: ReconcilePath,
  crashAt?: number,
  reference?: Snapshot,
): Promise<RunOutcome> {
  return await withNamespace(client, `crash-${path.name}-${crashAt ?? "ref"}`, async (ns) => {
    const proxy = await FaultProxy.start({ kubeconfig });
    let op: OperatorProcess | undefined;
    try {
      op = await startOperator(proxy, ns);
      const ctx = { client, namespace: ns };
      await path.setup(ctx);
      await quiesce(client, proxy, op, ns);
      const before = await uidsOf(client, ns);
      const certBefore = await curveSecret(client, ns);
      const base = proxy.writes;

      let killed = false;
      let onKilled: () => void = () => {};
      const killedNow = new Promise<void>((r) => onKilled = r);
      if (crashAt !== undefined) {
        const victim = op;
        proxy.onWrite = (_req, count) => {
          if (count - base !== crashAt || killed) return;
          proxy.freeze();
          killed = true;
          victim.kill().then(onKilled);
        };
      }
      await path.act(ctx);
      if (crashAt !== undefined) {
        // Either the i-th write happens, or the operator finishes with fewer writes (it reconciled
        // the change and then stayed quiet: a barrier, not just a silence).
        await Promise.race([killedNow, quiesce(client, proxy, op, ns, 3_000)]);
        proxy.onWrite = undefined;
        if (killed) {
          await killedNow;
          proxy.thaw();
          op = await startOperator(proxy, ns);
        }
      }

      let end: Snapshot;
      if (reference) {
        end = await eventually(async () => {
          const got = await snapshot(client, ns);
          const diff = describeDifference(reference, got);
          if (diff) throw new Error(`not converged:\n${diff}`);
          return got;
        }, { timeoutMs: CONVERGE_MS, intervalMs: 250 });
        // Converged and stays there: no further writes undo it.
        await settle(proxy);
        const again = await snapshot(client, ns);
        const diff = describeDifference(reference, again);
        if (diff) throw new Error(`diverged after converging:\n${diff}`);
      } else {
        // The reference end state and write count: taken once the operator has acted on the
        // change and gone quiet, however loaded the machine.
        await quiesce(client, proxy, op, ns, 2_500);
        end = await snapshot(client, ns);
      }
      const writes = proxy.writes - base;

      // Nothing that existed before the change was deleted and made again.
      const after = await uidsOf(client, ns);
      for (const [key, uid] of before) {
        const now = after.get(key);
        if (now !== undefined) assert.equal(now, uid, `${key} was re-created`);
      }
      // The certificate is the first one ever created for this MiniCluster.
      const firstCert = certBefore ?? firstCreatedSecret(proxy);
      const certAfter = await curveSecret(client, ns);
      if (certAfter && firstCert) {
        assert.equal(certAfter.metadata?.uid, firstCert.metadata?.uid, "curve Secret re-created");
        assert.deepEqual(certAfter.data, firstCert.data, "curve certificate changed");
      }
      if (path.name === "delete") {
        await client.get(MiniClusters, ns, MC).then(
          () => assert.fail("the MiniCluster still exists (finalizer not removed)"),
          (e) => {
            if (!isNotFound(e)) throw e;
          },
        );
      }
      assertGuardedWrites(proxy.requests);
      return { writes, end, killed };
    } catch (e) {
      const log = op ? `\n--- operator log ---\n${op.logTail(25)}` : "";
      throw new Error(`${(e as Error).message}${log}`);
    } finally {
      await op?.kill();
      await proxy.close();
    }
  });
}

async function curveSecret(client: KubeClient, ns: string): Promise<Secret | undefined> {
  try {
    return await client.get<Secret>(Secrets, ns, `${MC}-curve-cert`);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** The curve Secret as the apiserver answered its creation (a create or create-only apply). */
function firstCreatedSecret(proxy: FaultProxy): Secret | undefined {
  const created = proxy.requests.find((r) =>
    (r.method === "POST" || r.method === "PATCH") && r.resource === "secrets" && r.code === 201 &&
    r.response
  );
  return created ? JSON.parse(created.response!) as Secret : undefined;
}

/** Which crash indices to run for N writes: all of them, or first, middle and last. */
export function crashIndices(n: number, all: boolean): number[] {
  if (all) return Array.from({ length: n }, (_, i) => i + 1);
  return [...new Set([1, Math.ceil(n / 2), n])].filter((i) => i >= 1 && i <= n);
}

/**
 * The reference run of every path, then every selected plan of every path, at most `concurrency`
 * runs at once (each run has its own namespace, proxy and operator process).
 */
export async function crashMatrix(
  client: KubeClient,
  kubeconfig: string,
  paths: ReconcilePath[],
  opts: { all: boolean; concurrency: number },
): Promise<PlanResult[]> {
  const timed = async (plan: string, fn: () => Promise<string>): Promise<PlanResult> => {
    const t0 = performance.now();
    try {
      const detail = await fn();
      return { plan, ok: true, detail, seconds: (performance.now() - t0) / 1000 };
    } catch (e) {
      return {
        plan,
        ok: false,
        detail: (e as Error).message,
        seconds: (performance.now() - t0) / 1000,
      };
    }
  };
  const refs: (RunOutcome | undefined)[] = [];
  const results = await pool(
    opts.concurrency,
    paths.map((path, k) => () =>
      timed(`crash ${path.name} reference`, async () => {
        refs[k] = await runPath(client, kubeconfig, path);
        return `${refs[k]!.writes} writes`;
      })
    ),
  );
  const plans: (() => Promise<PlanResult>)[] = [];
  paths.forEach((path, k) => {
    const ref = refs[k];
    if (!ref) return;
    for (const i of crashIndices(ref.writes, opts.all)) {
      plans.push(() =>
        timed(`crash ${path.name} after write ${i}/${ref.writes}`, async () => {
          const out = await runPath(client, kubeconfig, path, i, ref.end);
          return out.killed ? "killed, restarted, converged" : "fewer writes this run; converged";
        })
      );
    }
  });
  return [...results, ...await pool(opts.concurrency, plans)];
}
