// The pacing mechanisms' switches as the reconcile sees them (docs/write-pacing.md), on the fake
// API server wired from the operator's flags: the first-status delay, own writes and the freshness
// fence switched off by --pacing-off, and the priorities of the reconcile's writes (status and
// Events behind the children).
import assert from "node:assert/strict";
import { TIMING } from "../../controllers/minicluster/timing.ts";
import type { ApplyOptions, WriteOptions } from "../../runtime/client/api_client.ts";
import { isConflict } from "../../runtime/client/errors.ts";
import type { ResourceType } from "../../runtime/client/resources.ts";
import { resourceName } from "../../runtime/client/resources.ts";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { Jobs } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const STATUS = "apply miniclusters.flux-framework.org/status flux";

Deno.test("reconcile pacing: with first-status-delay off, the reconcile that creates the Job writes the status", async () => {
  const delayed = new FakeOperator();
  await delayed.create("flux");
  delayed.requestsSince();
  assert.deepEqual(await delayed.reconcile("flux"), { requeueAfter: TIMING.firstStatusDelayMs });
  assert.ok(!delayed.writesSince().includes(STATUS), "by default the status waits");

  const op = new FakeOperator({ pacingOff: ["first-status-delay"] });
  await op.create("flux");
  op.requestsSince();
  await op.reconcile("flux");
  const writes = op.writesSince();
  assert.equal(writes.at(-1), STATUS, "the status last, in the same reconcile");
  assert.ok(writes.includes("apply jobs.batch flux"));
  assert.equal(op.condition("flux", "Ready")?.status, "False");
});

Deno.test("reconcile pacing: with own-writes off, a reconcile before the cache caught up writes again and fails", async () => {
  const op = new FakeOperator({ pacingOff: ["own-writes", "first-status-delay"] });
  await op.create("flux");
  await op.reconcile("flux");
  op.requestsSince();
  // The cache still shows the MiniCluster without its finalizer, and nothing stands in for the
  // patch that added it: the reconcile adds it again, from a stale resourceVersion, and fails
  // with a Conflict (the controller retries it, with backoff).
  await assert.rejects(op.reconcile("flux"), (e) => isConflict(e));
  assert.deepEqual(op.writesSince(), ["patch miniclusters.flux-framework.org flux"]);

  const kept = new FakeOperator({ pacingOff: ["first-status-delay"] });
  await kept.create("flux");
  await kept.reconcile("flux");
  kept.requestsSince();
  await kept.reconcile("flux");
  assert.deepEqual(kept.requestsSince(), [], "with own writes: nothing (see reconcile_create)");
});

Deno.test("reconcile pacing: --pacing-off=freshness-fence reaches the fence: a stale view is written from, unread", async () => {
  for (const off of [false, true]) {
    const op = new FakeOperator({ flags: off ? ["--pacing-off=freshness-fence"] : [] });
    await op.create("flux", { size: 2, maxSize: 4 });
    await op.converge("flux");
    // The user scales to 3, but the cache still shows generation 1 (a lagging watch).
    await op.api.patch(MiniClusters, NS, "flux", { spec: { size: 3 } }, "merge");
    op.showStale("flux", 1, 1);
    op.requestsSince();
    await op.reconcile("flux");
    const reads = op.requestsSince().filter((r) => r.verb === "get");
    const parallelism = op.api.peek<Job>(Jobs, NS, "flux")?.spec?.parallelism;
    if (off) {
      assert.deepEqual(reads, [], "off: the view is trusted, nothing read");
      assert.equal(parallelism, 1, "off: the stale spec is written (what the fence prevents)");
    } else {
      assert.deepEqual(reads.map((r) => r.resource), ["miniclusters.flux-framework.org"]);
      assert.equal(parallelism, 2, "on: nothing written from generation 1");
    }
  }
});

Deno.test("reconcile pacing: the status and its Events go at low priority, the children at normal", async () => {
  const op = new FakeOperator();
  const priorities: string[] = [];
  const record = (rt: ResourceType, opts?: { priority?: string; subresource?: string }) =>
    priorities.push(
      `${resourceName(rt)}${opts?.subresource ? `/${opts.subresource}` : ""} ${
        opts?.priority ?? "normal"
      }`,
    );
  const { apply, create } = {
    apply: op.api.apply.bind(op.api),
    create: op.api.create.bind(op.api),
  };
  op.api.apply = <T>(rt: ResourceType, obj: T, opts: ApplyOptions) => {
    record(rt, opts);
    return apply(rt, obj, opts);
  };
  op.api.create = <T>(rt: ResourceType, obj: T, opts?: WriteOptions) => {
    record(rt, opts);
    return create(rt, obj, opts);
  };
  await op.create("flux", { size: 2 });
  priorities.length = 0;
  await op.reconcile("flux");
  op.sync();
  op.seedPods("flux", 2, 2);
  op.time += TIMING.firstStatusDelayMs;
  await op.reconcile("flux");
  assert.ok(priorities.includes("jobs.batch normal"), priorities.join("; "));
  assert.ok(priorities.includes("miniclusters.flux-framework.org/status low"));
  assert.ok(priorities.includes("events low"), "the Ready Event");
  assert.deepEqual(
    priorities.filter((p) => p.endsWith(" low")).map((p) => p.split(" ")[0]).sort(),
    ["events", "miniclusters.flux-framework.org/status"],
    "nothing else waits behind the children",
  );
});
