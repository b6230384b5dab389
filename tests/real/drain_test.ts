// Shrinking never kills a job, on real nodes with real Flux (spec.flux.drainGracePeriodSeconds):
// a long job on every rank, the size lowered from 4 to 2: ranks 2-3 are drained, the job
// completes, and only then do their pods go; a queued job that fits the smaller size runs on the
// ranks left; grown again, the drained ranks are undrained and free. With a short grace period
// the job is cancelled instead, and the MiniCluster's Event names it. Every assertion reads what
// Flux answers in the lead broker (`kubectl exec`) or what the API shows.

import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { DRAIN_REASON } from "../../controllers/minicluster/children/scripts/drain.ts";
import { FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
import { eventually } from "../harness.ts";
import { kubectl, onLead, REAL_NAMESPACE, type RealEnv, realMiniCluster, realTest } from "./env.ts";

const INDEX = "batch.kubernetes.io/job-completion-index";
const indexOf = (p: Pod) => Number(p.metadata?.labels?.[INDEX] ?? -1);
const seconds = (t0: number) => ((performance.now() - t0) / 1000).toFixed(1);

/** `flux resource list` → the NNODES of a state ("free", "down", ...). */
function nodesIn(resourceList: string, state: string): number | undefined {
  const line = resourceList.split("\n").find((l) => l.trim().startsWith(`${state} `));
  return line === undefined ? undefined : Number(line.trim().split(/\s+/)[1]);
}

/** Waits until the instance shows `free` nodes free. */
async function freeNodes(env: RealEnv, name: string, free: number): Promise<string> {
  return await eventually(async () => {
    const out = await onLead(env, name, "flux resource list\n");
    if (nodesIn(out, "free") !== free) throw new Error(`${name}: want ${free} free nodes:\n${out}`);
    return out;
  }, { timeoutMs: 150_000, intervalMs: 2000 });
}

async function condition(env: RealEnv, name: string, type: string): Promise<Condition | undefined> {
  const mc = await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name);
  return (mc.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type);
}

/**
 * `reason: message` of the Events about this MiniCluster (by uid: an earlier one of its name left
 * its own), or about every object of `kind` (e.g. the pods).
 */
async function events(env: RealEnv, name: string, kind = "MiniCluster"): Promise<string[]> {
  const uid = (await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name)).metadata
    ?.uid;
  const out = await kubectl([
    "-n",
    REAL_NAMESPACE,
    "get",
    "events",
    "--field-selector",
    kind === "MiniCluster"
      ? `involvedObject.kind=MiniCluster,involvedObject.name=${name},involvedObject.uid=${uid}`
      : `involvedObject.kind=${kind}`,
    "-o",
    'jsonpath={range .items[*]}{.reason}: {.message}{"\\n"}{end}',
  ]);
  return out.split("\n").filter((l) => l !== "");
}

/** The submitted job's id, once Flux started it. */
async function submitStarted(env: RealEnv, name: string, args: string): Promise<string> {
  const id = (await onLead(env, name, `flux submit ${args}\n`)).trim().split("\n").pop()!.trim();
  await onLead(env, name, `flux job wait-event -t 60 ${id} start\n`);
  return id;
}

realTest(
  "real: shrinking drains the removed ranks; their pods go once the job on them completed",
  async (env) => {
    const name = "drain";
    const grace = 90;
    await env.apply(realMiniCluster(name, {
      size: 4,
      interactive: true,
      flux: { container: { image: FLUX_VIEW_IMAGE }, drainGracePeriodSeconds: grace },
    }));
    await freeNodes(env, name, 4);
    const pods = await env.pods(name);
    assert.deepEqual(
      pods.map((p) => p.spec?.terminationGracePeriodSeconds),
      [grace, grace, grace, grace],
      "every pod has the grace period the user set",
    );
    // A long job on every rank, the highest included, and a queued one that fits two ranks.
    // Exclusive: the queued job cannot start beside it on the same nodes.
    const long = await submitStarted(env, name, "-N4 --exclusive sleep 25");
    const queued = (await onLead(env, name, "flux submit -N2 hostname\n")).trim();
    const t0 = performance.now();
    await kubectl(["-n", REAL_NAMESPACE, "scale", "minicluster", name, "--replicas=2"]);

    // While the job runs, ranks 2-3 are draining in Flux and their pods stay (terminating).
    const draining = await eventually(async () => {
      const out = await onLead(env, name, "flux resource status -s draining -no '{ranks}'\n");
      if (out.trim() !== "2-3") throw new Error(`ranks 2-3 not draining: ${out}`);
      return out;
    }, { timeoutMs: 30_000, intervalMs: 1000 });
    console.error(`[drain] ranks ${draining.trim()} draining ${seconds(t0)} s after the scale`);
    // (Rank 2's pod and rank 3's may be seen going one after the other.)
    await eventually(async () => {
      const c = await condition(env, name, "Draining");
      if (
        c?.status !== "True" || c.reason !== "RanksDraining" ||
        !c.message?.startsWith("draining ranks 2-3 (the size is now 2) in Flux")
      ) throw new Error(`Draining is ${JSON.stringify(c)}`);
    }, { timeoutMs: 20_000, intervalMs: 500 });

    // Poll until the job has ended: the pods of ranks 2-3 must exist all that time.
    let jobEnded = 0;
    let podsGone = 0;
    const early: string[] = [];
    await eventually(async () => {
      const left = (await env.pods(name)).filter((p) => indexOf(p) >= 2);
      const state = (await onLead(env, name, `flux jobs -no '{state}' ${long}\n`)).trim();
      if (state === "RUN") {
        // Read before the job's state: these pods were there while it ran.
        if (left.length !== 2) early.push(`${seconds(t0)} s: ${left.length} pods of ranks 2-3`);
        throw new Error(`${long} still runs`);
      }
      jobEnded ||= performance.now();
      if (left.length > 0) throw new Error(`${left.length} pods of ranks 2-3 still there`);
      podsGone = performance.now();
    }, { timeoutMs: 120_000, intervalMs: 1000 });
    console.error(
      `[drain] size 4 -> 2: the job ended ${((jobEnded - t0) / 1000).toFixed(1)} s after the ` +
        `scale, the pods of ranks 2-3 were gone ${((podsGone - t0) / 1000).toFixed(1)} s after it`,
    );
    assert.deepEqual(early, [], `a pod of rank 2 or 3 went while ${long} ran`);
    assert.ok(podsGone - t0 < grace * 1000, "the pods went when the job ended, not at the grace");

    // The job completed; the queued one ran on the ranks left.
    const result = (await onLead(env, name, `flux jobs -no '{result} {returncode}' ${long}\n`))
      .trim();
    assert.equal(result, "COMPLETED 0");
    await onLead(env, name, `flux job wait-event -t 60 ${queued} clean\n`);
    const ran = (await onLead(env, name, `flux jobs -no '{result} {ranks}' ${queued}\n`)).trim();
    assert.equal(ran, "COMPLETED [0-1]", "the queued job ran on the ranks left");
    const drained = await onLead(env, name, "flux resource drain -no '{ranks} {reason}'\n");
    assert.equal(drained.trim(), `2-3 ${DRAIN_REASON}`);
    const done = await eventually(async () => {
      const c = await condition(env, name, "Draining");
      if (c?.reason !== "NotDraining") throw new Error(`Draining is ${JSON.stringify(c)}`);
      return c;
    }, { timeoutMs: 30_000, intervalMs: 1000 });
    assert.equal(done.status, "False");
    assert.ok((await events(env, name)).some((e) => e.startsWith("RanksDraining: ")));

    // Grown again: the new brokers of ranks 2-3 undrain their ranks, and all four are free.
    const t1 = performance.now();
    await kubectl(["-n", REAL_NAMESPACE, "scale", "minicluster", name, "--replicas=4"]);
    await freeNodes(env, name, 4);
    console.error(`[drain] size 2 -> 4: four ranks free again ${seconds(t1)} s after the scale`);
    const after = await onLead(env, name, "flux resource drain -no '{ranks}'\n");
    assert.equal(after.trim(), "", "no rank is left drained");
  },
  { timeoutMs: 420_000 },
);

realTest(
  "real: a removed rank whose grace period runs out has its job cancelled, and says which",
  async (env) => {
    const name = "drain-grace";
    const grace = 10;
    await env.apply(realMiniCluster(name, {
      size: 2,
      interactive: true,
      flux: { container: { image: FLUX_VIEW_IMAGE }, drainGracePeriodSeconds: grace },
    }));
    await freeNodes(env, name, 2);
    const pods = await env.pods(name);
    assert.deepEqual(pods.map((p) => p.spec?.terminationGracePeriodSeconds), [grace, grace]);
    const long = await submitStarted(env, name, "-N2 sleep 600");
    const t0 = performance.now();
    await kubectl(["-n", REAL_NAMESPACE, "scale", "minicluster", name, "--replicas=1"]);
    // The job is cancelled once the grace period runs out, then the pod goes.
    await onLead(env, name, `flux job wait-event -t 60 ${long} clean\n`);
    const cancelled = performance.now();
    const result = (await onLead(env, name, `flux jobs -no '{result}' ${long}\n`)).trim();
    assert.equal(result, "CANCELED");
    await eventually(async () => {
      if ((await env.pods(name)).some((p) => indexOf(p) === 1)) throw new Error("rank 1 stays");
    }, { timeoutMs: 60_000, intervalMs: 500 });
    const gone = performance.now();
    console.error(
      `[drain] grace ${grace} s: the job cancelled ${((cancelled - t0) / 1000).toFixed(1)} s ` +
        `after the scale, the pod gone ${((gone - t0) / 1000).toFixed(1)} s after it`,
    );
    assert.ok(cancelled - t0 >= (grace - 5) * 1000, "not cancelled long before the grace period");
    // The MiniCluster's Warning Event names the cancelled job (the kubelet's on the pod says only
    // that the hook failed).
    const hook = (await events(env, name, "Pod")).filter((e) =>
      e.startsWith("FailedPreStopHook: ")
    );
    console.error(`[drain] the pod's Events: ${hook.join("\n")}`);
    const named = await eventually(async () => {
      const found = (await events(env, name)).find((e) => e.startsWith("DrainGraceExpired: "));
      if (!found) {
        throw new Error(`no DrainGraceExpired Event: ${(await events(env, name)).join("\n")}`);
      }
      return found;
    }, { timeoutMs: 30_000, intervalMs: 1000 });
    console.error(`[drain] ${named}`);
    // Its f58 id, whichever first letter the locale gave it (ƒ or f).
    assert.ok(named.includes(long.slice(1)), `${named} names ${long}`);
  },
  { timeoutMs: 300_000 },
);
