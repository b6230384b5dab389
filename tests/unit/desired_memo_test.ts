// The memo of desired children (controllers/minicluster/kinds/desired_memo.ts): a starting
// MiniCluster's reconciles reuse its last build while every input is the same, build anew on any
// change, and a settled MiniCluster is forgotten.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { withDefaults } from "../../api/defaults.ts";
import type { DefaultedMiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";
import type { DesiredChildren } from "../../controllers/minicluster/kinds/child_kinds.ts";
import { desiredChildren } from "../../controllers/minicluster/kinds/desired.ts";
import {
  DESIRED_MEMO_METRIC,
  DesiredMemo,
  startingJob,
} from "../../controllers/minicluster/kinds/desired_memo.ts";
import { Registry } from "../../runtime/metrics/metrics.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";
import { parseMetrics } from "../../testing/metrics_text.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";

function spec(name = "flux", size = 2, uid = `uid-${name}`): DefaultedMiniCluster {
  const mc = sampleMiniCluster(name, NS, { size });
  mc.metadata = { ...mc.metadata, uid };
  return withDefaults(mc);
}

function counts(registry: Registry): { built: number; memo: number } {
  const samples = parseMetrics(registry.render()).filter((s) => s.name === DESIRED_MEMO_METRIC);
  const of = (source: string) => samples.find((s) => s.labels.source === source)?.value ?? 0;
  return { built: of("built"), memo: of("memo") };
}

/** A memo and a counting build of the real builders. */
function memoWithBuilds(capacity?: number) {
  const registry = new Registry();
  const memo = new DesiredMemo(registry, capacity);
  let builds = 0;
  const desired = (mc: DefaultedMiniCluster, opts = {}): Promise<DesiredChildren> =>
    memo.desired(mc, specSizing(mc), opts, () => {
      builds++;
      return desiredChildren(mc, specSizing(mc), opts);
    });
  return { memo, registry, desired, builds: () => builds };
}

Deno.test("desired memo: the same inputs give the kept build, frozen, counted on /metrics", async () => {
  const { registry, desired, builds } = memoWithBuilds();
  const first = await desired(spec());
  // A later reconcile defaults the spec again: equal inputs, other objects.
  const again = await desired(spec());
  assert.equal(again, first);
  assert.equal(builds(), 1);
  assert.ok(Object.isFrozen(first.job) && Object.isFrozen(first.job.spec?.template?.spec));
  assert.deepEqual(first, await desiredChildren(spec(), specSizing(spec())), "what a build makes");
  assert.deepEqual(counts(registry), { built: 1, memo: 1 });
});

Deno.test("desired memo: any other input builds anew", async () => {
  const { desired, builds } = memoWithBuilds();
  const base = await desired(spec());
  const changed = [
    await desired(spec("flux", 3)), // the spec
    await desired(spec("flux", 2, "uid-other")), // a MiniCluster made again under the name
    await desired(spec(), { suspend: true }), // what the reconcile decided
    await desired(spec(), { runningSubdomain: "old-subdomain" }),
  ];
  assert.equal(builds(), 5);
  for (const d of changed) assert.notEqual(d, base);
  assert.notEqual(changed[0].job.spec?.parallelism, base.job.spec?.parallelism);
  assert.equal(await desired(spec(), { runningSubdomain: "old-subdomain" }), changed[3]);
  assert.equal(builds(), 5, "the last inputs are kept");
});

Deno.test("desired memo: at most `capacity` MiniClusters, the least recently used dropped; forget", async () => {
  const { memo, desired, builds } = memoWithBuilds(2);
  await desired(spec("a"));
  await desired(spec("b"));
  await desired(spec("a")); // a is now the most recently used
  await desired(spec("c")); // drops b
  assert.equal(memo.size, 2);
  assert.equal(builds(), 3);
  await desired(spec("a"));
  assert.equal(builds(), 3, "a kept");
  await desired(spec("b"));
  assert.equal(builds(), 4, "b was dropped");
  memo.forget(`${NS}/b`);
  await desired(spec("b"));
  assert.equal(builds(), 5, "b forgotten");
});

Deno.test("desired memo: a Job starts until every pod it runs is Ready, unless suspended or finished", () => {
  const job = (spec: Omit<NonNullable<Job["spec"]>, "template">, status?: Job["status"]): Job => ({
    metadata: { uid: "job-uid" },
    spec: { template: {}, ...spec },
    status,
  });
  const pod = (ready: boolean): Pod => ({
    metadata: {
      ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "j", uid: "job-uid" }],
    },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
    },
  });
  assert.equal(startingJob(undefined, []), false);
  assert.equal(startingJob(job({ parallelism: 2 }), []), true);
  assert.equal(startingJob(job({ parallelism: 2 }), [pod(true), pod(false)]), true);
  assert.equal(startingJob(job({ parallelism: 2 }), [pod(true), pod(true)]), false);
  assert.equal(startingJob(job({ parallelism: 2, suspend: true }), []), false, "queued");
  const done = { conditions: [{ type: "Complete", status: "True" }] };
  assert.equal(startingJob(job({ parallelism: 2 }, done), []), false);
});

Deno.test("desired memo: the first-status reconcile reuses the build; a settled MiniCluster builds anew", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2 });
  await op.reconcile("flux"); // creates the children, asks to come back for the first status
  op.sync();
  assert.deepEqual(counts(op.registry), { built: 1, memo: 0 });
  op.seedPods("flux", 2, 0);
  op.time += 1_000;
  await op.reconcile("flux");
  op.sync();
  assert.deepEqual(counts(op.registry), { built: 1, memo: 1 }, "the first status: reused");

  // Every pod Ready: the reconcile that reports it settles, and is forgotten.
  op.seedPods("flux", 2, 2);
  op.sync();
  op.time += 5_000;
  assert.equal((await op.reconcile("flux")).requeueAfter, undefined);
  op.sync();
  assert.deepEqual(counts(op.registry), { built: 1, memo: 2 });
  await op.reconcile("flux");
  assert.deepEqual(counts(op.registry), { built: 2, memo: 2 }, "settled: built anew");

  // A spec change builds anew and is applied.
  await op.api.patch(MiniClusters, NS, "flux", { spec: { size: 1 } }, "merge");
  op.sync();
  await op.reconcile("flux");
  assert.deepEqual(counts(op.registry), { built: 3, memo: 2 });
});
