// The services pod against admission and other hands (issue 18, defect 1): what admission or
// someone else changes in its spec is left alone, its labels are patched back, and a spec change
// re-creates it with an Event, at most once per backoff step; labels someone keeps rewriting are
// patched back with the same kind of backoff and reported.
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { RECREATE_REQUEUE_MS } from "../../runtime/controller/dependents.ts";
import { Pods } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { RecreateBudget } from "../../controllers/minicluster/kinds/services_pod_drift.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

const services = [{ name: "api", image: "nginx:1", ports: [80] }];
const POD = "flux-services";

async function converged(): Promise<FakeOperator> {
  const op = new FakeOperator();
  await op.create("flux", { services });
  await op.converge("flux");
  op.requestsSince();
  return op;
}

/** What the AlwaysPullImages admission plugin does to every container of a pod. */
function alwaysPull(op: FakeOperator) {
  const pod = op.api.peek<Pod>(Pods, NS, POD)!;
  const containers = pod.spec!.containers.map((c) => ({ ...c, imagePullPolicy: "Always" }));
  // As the pod would have been admitted (the fake, like the API, refuses spec updates).
  op.api.seed(Pods, { ...pod, spec: { ...pod.spec, containers } });
  op.sync();
  op.requestsSince();
}

Deno.test("services pod: a spec changed by admission is left alone", async () => {
  const op = await converged();
  const uid = op.api.peek<Pod>(Pods, NS, POD)!.metadata?.uid;
  alwaysPull(op);
  for (let i = 0; i < 5; i++) {
    await op.reconcile("flux");
    op.sync();
    op.time += RECREATE_REQUEUE_MS;
  }
  assert.deepEqual(op.writesSince(), []);
  assert.equal(op.api.peek<Pod>(Pods, NS, POD)!.metadata?.uid, uid);
  assert.equal(op.condition("flux", "Unappliable")?.status, "False");
});

Deno.test("services pod: a hand-edited label is patched back, the pod stays", async () => {
  const op = await converged();
  const before = op.api.peek<Pod>(Pods, NS, POD)!;
  const [label, value] = Object.entries(before.metadata!.labels!).find(([k]) =>
    !k.startsWith("app.kubernetes.io/managed-by")
  )!;
  await op.api.patch(Pods, NS, POD, { metadata: { labels: { [label]: "edited" } } }, "merge");
  op.sync();
  op.requestsSince();
  await op.reconcile("flux");
  assert.deepEqual(op.writesSince(), ["patch pods flux-services"]);
  const after = op.api.peek<Pod>(Pods, NS, POD)!;
  assert.equal(after.metadata?.uid, before.metadata?.uid);
  assert.equal(after.metadata?.labels?.[label], value);
  op.sync();
  await op.reconcile("flux");
  assert.deepEqual(op.writesSince(), [], "then nothing more");
});

Deno.test("services pod: a changed spec re-creates it with an Event, then backs off", async () => {
  const op = await converged();
  await op.api.patch(MiniClusters, NS, "flux", {
    spec: { services: [{ ...services[0], image: "nginx:2" }] },
  }, "merge");
  op.sync();
  op.requestsSince();
  await op.reconcile("flux");
  assert.ok(op.writesSince().includes("delete pods flux-services"));
  assert.ok(op.events("flux").includes("ServicesPodRecreated"));
  op.sync();
  await op.reconcile("flux");
  op.sync();
  assert.equal(op.api.peek<Pod>(Pods, NS, POD)!.spec?.containers[0].image, "nginx:2");

  // Changed again at once: the pod waits for the backoff, and the condition says so.
  await op.api.patch(MiniClusters, NS, "flux", {
    spec: { services: [{ ...services[0], image: "nginx:3" }] },
  }, "merge");
  op.sync();
  op.requestsSince();
  const action = await op.reconcile("flux");
  assert.ok(!op.writesSince().includes("delete pods flux-services"));
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.reason, "RecreateBackoff");
  assert.match(c!.message!, /spec\.containers\[name=api\]\.image/);
  assert.ok(action.requeueAfter! > 0 && action.requeueAfter! <= 10_000);
  op.time += action.requeueAfter!;
  op.sync();
  await op.reconcile("flux");
  assert.ok(op.writesSince().includes("delete pods flux-services"));
});

Deno.test("RecreateBudget: at once, then doubling waits, forgotten after a quiet spell", () => {
  let now = 0;
  const b = new RecreateBudget(() => now, 10, 40, 1_000);
  assert.equal(b.wait("k"), 0);
  b.record("k");
  assert.equal(b.wait("k"), 10);
  now = 10;
  b.record("k");
  assert.equal(b.wait("k"), 20);
  now = 30;
  b.record("k");
  now = 31;
  assert.equal(b.wait("k"), 39);
  b.record("k");
  assert.equal(b.wait("k"), 40, "capped");
  now = 2_000;
  assert.equal(b.wait("k"), 0);
});

Deno.test("services pod: a label a webhook rewrites after each patch is restored with backoff and reported", async () => {
  const op = await converged();
  const before = op.api.peek<Pod>(Pods, NS, POD)!;
  const [label, value] = Object.entries(before.metadata!.labels!).find(([k]) =>
    !k.startsWith("app.kubernetes.io/managed-by")
  )!;
  // The webhook: every write of the pod comes out with its own value of the label.
  const rewrite = async () => {
    await op.api.patch(Pods, NS, POD, { metadata: { labels: { [label]: "webhook" } } }, "merge");
    op.sync();
  };
  await rewrite();
  op.requestsSince();
  const start = op.time;
  let patches = 0;
  // Ten minutes of reconciles, one a second (the pod's events and requeues come at least as often).
  while (op.time - start < 600_000) {
    await op.reconcile("flux");
    const n = op.writesSince().filter((w) => w === "patch pods flux-services").length;
    patches += n;
    op.sync();
    if (n > 0) await rewrite();
    op.requestsSince();
    op.time += 1_000;
  }
  // Unbounded: 600 patches. Bounded: at 0, 10, 30, 70, 150, 310 s and every 300 s after.
  assert.ok(patches >= 2 && patches <= 7, `${patches} patches in 10 min`);
  const c = op.condition("flux", "Unappliable");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "LabelsOverridden");
  assert.ok(c!.message!.includes(`label ${label}`), c!.message);
  assert.match(c!.message!, /a mutating webhook or another controller/);
  assert.equal(op.events("flux").filter((r) => r === "LabelsOverridden").length, 1, "one Event");
  assert.equal(op.api.peek<Pod>(Pods, NS, POD)!.metadata?.uid, before.metadata?.uid);

  // The webhook is gone: the next restore holds and the condition clears.
  for (let i = 0; i < 301; i++) {
    const action = await op.reconcile("flux");
    op.sync();
    op.time += Math.min(action.requeueAfter ?? 1_000, 1_000);
  }
  assert.equal(op.api.peek<Pod>(Pods, NS, POD)!.metadata?.labels?.[label], value);
  assert.equal(op.condition("flux", "Unappliable")?.status, "False");
});

Deno.test("services pod: a label edited by hand now and then is patched back at once, no condition", async () => {
  const op = await converged();
  const before = op.api.peek<Pod>(Pods, NS, POD)!;
  const [label, value] = Object.entries(before.metadata!.labels!).find(([k]) =>
    !k.startsWith("app.kubernetes.io/managed-by")
  )!;
  for (let i = 0; i < 3; i++) {
    await op.api.patch(Pods, NS, POD, { metadata: { labels: { [label]: `edit-${i}` } } }, "merge");
    op.sync();
    op.requestsSince();
    await op.reconcile("flux");
    assert.deepEqual(op.writesSince().filter((w) => w.startsWith("patch pods")), [
      "patch pods flux-services",
    ]);
    op.sync();
    assert.equal(op.api.peek<Pod>(Pods, NS, POD)!.metadata?.labels?.[label], value);
    assert.equal(op.condition("flux", "Unappliable")?.status, "False");
    op.time += 5 * 60_000;
  }
});
