// The operator's writes give way to a burst of the user's creates (runtime/pacing/burst_yield.ts), on the
// real apiserver: while MiniClusters arrive faster than a burst's rate, at most one write of ours
// is in flight; a second after the last one, the full bound again; every child gets made; and a
// restart's initial list of as many MiniClusters is no burst. The rate here is 8 a second, not the
// operator's 20 (covered by the unit tests): a loaded CI apiserver may take 60 creates slower than
// 20 a second, and this test is about what the watch, the slots and the apiserver do together.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { MiniClusters } from "../../api/resource.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { eventually, integrationTest } from "../harness.ts";
import { type InProcessOperator, miniCluster, withOperator } from "./minicluster_operator.ts";

const COUNT = 60;
const WRITES = { max: 8, duringBursts: 1, burstPerSecond: 8 };

interface Sample {
  /** performance.now() when taken. */
  at: number;
  limit: number;
  inFlight: number;
}

/** The client's write bound and writes in flight, every few milliseconds until stopped. */
function sampleSlots(op: InProcessOperator): { samples: Sample[]; stop: () => void } {
  const samples: Sample[] = [];
  const slots = op.client.writeSlots;
  const timer = setInterval(
    () => samples.push({ at: performance.now(), limit: slots.limit, inFlight: slots.inFlight }),
    2,
  );
  return { samples, stop: () => clearInterval(timer) };
}

/** The maximal runs of samples taken while the bound was the lower one. */
function yieldEpisodes(samples: Sample[]): Sample[][] {
  const episodes: Sample[][] = [];
  let current: Sample[] | undefined;
  for (const s of samples) {
    if (s.limit !== WRITES.duringBursts) current = undefined;
    else if (current) current.push(s);
    else episodes.push(current = [s]);
  }
  return episodes;
}

async function jobCount(env: { client: InProcessOperator["client"]; namespace: string }) {
  return (await env.client.list<Job>(Jobs, { namespace: env.namespace })).items.length;
}

integrationTest(
  "burst yield: a burst of creates gets one write of ours in flight, then eight",
  async (env) => {
    await withOperator(env, async (op) => {
      const { samples, stop } = sampleSlots(op);
      try {
        const t0 = performance.now();
        await Promise.all(
          Array.from(
            { length: COUNT },
            (_, i) => env.client.create(MiniClusters, miniCluster(`b${i}`, env.namespace)),
          ),
        );
        const createsMs = performance.now() - t0;
        await eventually(async () => {
          const jobs = await jobCount(env);
          if (jobs < COUNT) throw new Error(`${jobs} of ${COUNT} Jobs`);
        }, { timeoutMs: 60_000, intervalMs: 200 });
        await eventually(() => {
          if (op.client.writeSlots.limit !== WRITES.max) throw new Error("still giving way");
          return Promise.resolve();
        }, { timeoutMs: 5_000, intervalMs: 50 });
        stop();
        console.log(`${COUNT} creates in ${createsMs.toFixed(0)} ms; ${samples.length} samples`);

        // Episodes of giving way: runs of samples at the lower bound. A loaded apiserver may take
        // the creates in clumps, so the yield may end and start again between them.
        const episodes = yieldEpisodes(samples);
        assert.ok(episodes.length > 0, "the bound went down to one during the creates");
        for (const episode of episodes) {
          // Writes in flight when the bound went down finish; after that, one at a time while it
          // lasts.
          const drained = episode.findIndex((s) => s.inFlight <= WRITES.duringBursts);
          const over = drained < 0
            ? []
            : episode.slice(drained).filter((s) => s.inFlight > WRITES.duringBursts);
          assert.deepEqual(over, [], "no more than one write in flight while giving way");
        }
        assert.ok(
          episodes.some((e) => e.some((s) => s.inFlight <= WRITES.duringBursts)),
          "the writes in flight drained to the lower bound",
        );
        // The bound comes back a second after the last create the watch saw; the headroom is for
        // a loaded machine's watch delay.
        const last = samples.findLast((s) => s.limit === WRITES.duringBursts)!;
        const afterCreates = last.at - (t0 + createsMs);
        assert.ok(
          afterCreates < 5_000,
          `the full bound came back ${afterCreates.toFixed(0)} ms after the creates had ended`,
        );
      } finally {
        stop();
      }
    }, { writesInFlight: WRITES });

    // A new operator over the same 60 MiniClusters: they arrive in its initial list, all at once,
    // and that is no burst.
    await withOperator(env, async (op) => {
      const { samples, stop } = sampleSlots(op);
      await new Promise((r) => setTimeout(r, 1_500));
      stop();
      assert.ok(samples.length > 0);
      assert.ok(
        samples.every((s) => s.limit === WRITES.max),
        "a restart's initial list does not lower the bound",
      );
    }, { writesInFlight: WRITES });
  },
  { timeoutMs: 120_000 },
);
