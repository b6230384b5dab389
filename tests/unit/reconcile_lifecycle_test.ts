// Reconcile paths around a MiniCluster's life on the fake API server: an invalid spec, the
// workspace deciding the sizes, the certificate made once, status progress, deletion (cleanup and
// its timeout). What a finished MiniCluster does next: reconcile_finished_test.ts.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Secret } from "kubernetes-types/core/v1.d.ts";
import {
  buildCurveSecret,
  generateCurveCertificate,
} from "../../controllers/minicluster/children/curve.ts";
import { buildWorkspace } from "../../controllers/minicluster/workspace/workspace.ts";
import { TIMING } from "../../controllers/minicluster/timing.ts";
import { ConfigMaps, Jobs, Pods, Secrets } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";
import { NAME_TAKEN_RECHECK_MS } from "../../runtime/controller/dependents.ts";

Deno.test("reconcile lifecycle: an invalid spec is a condition and an event, and builds nothing", async () => {
  const op = new FakeOperator();
  // Valid for the CRD, impossible in one pod: two containers define volume "data" differently.
  await op.create("bad", {
    containers: [
      {
        image: "app",
        command: "hostname",
        runFlux: true,
        volumes: { data: { path: "/data", emptyDir: true } },
      },
      { name: "side", image: "app", volumes: { data: { path: "/data", claimName: "pvc" } } },
    ],
  });
  await op.reconcile("bad");
  const c = op.condition("bad", "SpecInvalid");
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "ValidationFailed");
  assert.match(c!.message!, /volume "data" is defined differently/);
  assert.equal(op.condition("bad", "Ready")?.reason, "SpecInvalid");
  assert.deepEqual(op.api.objects(Jobs), []);
  assert.deepEqual(op.api.objects(ConfigMaps), []);
  assert.deepEqual(op.api.objects(MiniClusterWorkspaces), [], "not even the workspace");
  assert.ok(op.events("bad").includes("ValidationFailed"));
});

Deno.test("reconcile lifecycle: an existing workspace decides the sizes; someone else's is reported", async () => {
  const op = new FakeOperator();
  const mc = await op.create("adopt", { size: 2, maxSize: 3 });
  // Unlabelled, as an older operator may have left it: the cache cannot see it.
  const ws = buildWorkspace(mc, { maxSize: 5, size: 2 });
  await op.api.create(MiniClusterWorkspaces, { ...ws, metadata: { ...ws.metadata, labels: {} } });
  // New to the operator: built for the spec's sizes with the workspace in one round trip; the
  // workspace found holds another maximum, so the Job waits for a build from it.
  assert.deepEqual(await op.reconcile("adopt"), { requeueAfter: 0 });
  assert.deepEqual(op.api.objects(Jobs), [], "no Job from the assumed sizes");
  op.sync();
  await op.converge("adopt");
  const adopted = op.api.peek<MiniClusterWorkspace>(MiniClusterWorkspaces, NS, "adopt")!;
  assert.deepEqual(adopted.spec, ws.spec, "never rewritten");
  assert.equal(
    adopted.metadata?.labels?.["app.kubernetes.io/managed-by"],
    "minicluster-operator",
    "but labelled",
  );
  op.requestsSince();
  await op.reconcile("adopt");
  assert.deepEqual(op.requestsSince(), [], "so that the cache sees it from then on");
  const entrypoint = op.api.peek<ConfigMap>(ConfigMaps, NS, "adopt-entrypoint")!;
  assert.match(entrypoint.data!["flux-view"], /adopt-\[0-4\]/, "the hostlist is the workspace's");
  assert.equal(op.miniCluster("adopt")?.status?.maximumSize, 5);

  await op.api.create(MiniClusterWorkspaces, {
    metadata: { name: "other", namespace: NS },
    spec: { maxSize: 1, size: 1 },
  });
  await op.create("other");
  // New, and the workspace's name is someone else's: reported at once, looked at again later.
  assert.deepEqual(await op.reconcile("other"), { requeueAfter: NAME_TAKEN_RECHECK_MS });
  const c = op.condition("other", "Unappliable");
  assert.equal(c?.reason, "WorkspaceInvalid");
  assert.match(
    c!.message!,
    /MiniClusterWorkspace other exists and is not owned by this MiniCluster/,
  );
  assert.deepEqual(op.api.objects<Job>(Jobs).map((j) => j.metadata?.name), ["adopt"]);
});

Deno.test("reconcile lifecycle: a MiniCluster blocked by someone else's workspace recovers once it is gone", async () => {
  const op = new FakeOperator();
  await op.api.create(MiniClusterWorkspaces, {
    metadata: { name: "late", namespace: NS },
    spec: { maxSize: 1, size: 1 },
  });
  await op.create("late");
  await op.reconcile("late");
  op.sync();
  const action = await op.reconcile("late");
  assert.equal(op.condition("late", "Unappliable")?.reason, "WorkspaceInvalid");
  // The blocker is not ours: its deletion is no event the operator hears, so it looks again.
  assert.equal(action.requeueAfter, NAME_TAKEN_RECHECK_MS);

  await op.api.delete(MiniClusterWorkspaces, NS, "late");
  op.sync();
  op.time += action.requeueAfter!;
  await op.converge("late");
  assert.ok(op.api.peek<Job>(Jobs, NS, "late"), "the Job is created");
  assert.equal(op.condition("late", "Unappliable")?.status, "False");
});

Deno.test("reconcile lifecycle: the certificate is generated once; a given one is applied", async () => {
  let generated = 0;
  const op = new FakeOperator({
    curve: {
      generate: () => `certificate ${++generated}`,
      build: (mc, text) => buildCurveSecret(mc, text),
    },
  });
  await op.create("flux");
  await op.converge("flux");
  await op.api.delete(MiniClusters, NS, "flux"); // no effect on the Secret until cleanup
  assert.equal(generated, 1);
  const secret = op.api.peek<Secret>(Secrets, NS, "flux-curve-cert")!;
  assert.equal(atob(secret.data!["curve.cert"]), "certificate 1");

  const given = new FakeOperator();
  // A certificate real Flux accepts (the spec's is checked as Flux would: matching key pair).
  const cert = (await generateCurveCertificate()).text;
  await given.create("mine", { flux: { curveCert: cert } } as never);
  await given.converge("mine");
  const applied = given.api.peek<Secret>(Secrets, NS, "mine-curve-cert")!;
  assert.equal(atob(applied.data!["curve.cert"]), cert);
});

Deno.test("reconcile lifecycle: progress is written at most every interval, transitions at once", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 4 });
  await op.converge("flux");
  op.requestsSince();
  const statusWrites = () =>
    op.writesSince().filter((w) => w.startsWith("apply miniclusters.flux-framework.org/status"));

  op.seedPods("flux", 4, 1);
  await op.reconcile("flux");
  op.sync();
  assert.equal(statusWrites().length, 0, "1/4 ready a moment after 0/4: waits for the interval");
  op.time += TIMING.statusProgressIntervalMs;
  const action = await op.reconcile("flux");
  op.sync();
  assert.equal(statusWrites().length, 1);
  assert.deepEqual(action, {});
  assert.equal(op.miniCluster("flux")?.status?.readyPods, 1);

  op.seedPods("flux", 4, 4);
  await op.reconcile("flux");
  assert.equal(statusWrites().length, 1, "Ready turning True is written at once");
  assert.equal(op.condition("flux", "Ready")?.status, "True");
  assert.ok(op.events("flux").includes("PodsReady"));
});

Deno.test("reconcile lifecycle: deletion waits for the pods, then removes every child and the finalizer", async () => {
  const op = new FakeOperator();
  await op.create("gone", { size: 2, services: [{ name: "api", image: "nginx" }] });
  await op.converge("gone");
  op.seedPods("gone", 2, 2);
  await op.api.delete(MiniClusters, NS, "gone");
  op.sync();
  op.requestsSince();

  const waiting = await op.reconcile("gone");
  assert.deepEqual(waiting, { requeueAfter: 2_000 }, "pods remain: look again");
  const writes = op.writesSince();
  assert.ok(writes.includes("delete jobs.batch gone"));
  assert.ok(op.miniCluster("gone"), "the finalizer holds the MiniCluster");

  for (const pod of op.api.objects<{ metadata: { name: string } }>(Pods)) {
    if (pod.metadata.name !== "gone-services") await op.api.delete(Pods, NS, pod.metadata.name);
  }
  op.sync();
  await op.reconcile("gone");
  assert.equal(op.miniCluster("gone"), undefined, "the finalizer was removed");
  assert.deepEqual(op.api.objects(ConfigMaps), []);
  assert.deepEqual(op.api.objects(Secrets), []);
  assert.deepEqual(op.api.objects(Pods), [], "the services pod too");
  assert.ok(op.events("gone").includes("CleanedUp"));
  op.sync();
  assert.deepEqual(await op.reconcile("gone"), {}, "gone from the cache: forgotten");
});

Deno.test("reconcile lifecycle: deletion runs the waves in reverse: what runs pods first, what they mount once the pods are gone", async () => {
  const op = new FakeOperator();
  await op.create("waves", { size: 2, services: [{ name: "api", image: "nginx" }] });
  await op.converge("waves");
  op.seedPods("waves", 2, 2);
  await op.api.delete(MiniClusters, NS, "waves");
  op.sync();
  op.requestsSince();

  await op.reconcile("waves");
  const deleted = () => op.writesSince().filter((w) => w.startsWith("delete "));
  assert.deepEqual(deleted(), ["delete jobs.batch waves", "delete pods waves-services"]);
  for (const pod of op.api.objects<{ metadata: { name: string } }>(Pods)) {
    await op.api.delete(Pods, NS, pod.metadata.name);
  }
  op.sync();
  op.requestsSince();
  await op.reconcile("waves");
  assert.deepEqual(deleted().sort(), [
    "delete configmaps waves-entrypoint",
    "delete miniclusterworkspaces.flux-framework.org waves",
    "delete secrets waves-curve-cert",
    "delete services waves",
  ]);
  assert.equal(op.miniCluster("waves"), undefined);
});

Deno.test("reconcile lifecycle: deletion before the cache saw the children still leaves nothing", async () => {
  const op = new FakeOperator();
  await op.create("quick");
  await op.reconcile("quick");
  // Deleted at once: the caches show the MiniCluster's deletion but none of its children yet.
  await op.api.delete(MiniClusters, NS, "quick");
  op.caches.miniClusters.replace(op.api.objects(MiniClusters), { synced: true });
  await op.reconcile("quick");
  assert.equal(op.miniCluster("quick"), undefined);
  assert.deepEqual(op.api.objects(ConfigMaps), []);
  assert.deepEqual(op.api.objects(Secrets), []);
  assert.deepEqual(op.api.objects(Jobs), []);
});

Deno.test("reconcile lifecycle: deletion gives up waiting for pods after the timeout", async () => {
  const op = new FakeOperator({ cleanupTimeoutMs: 10_000 });
  await op.create("stuck");
  await op.converge("stuck");
  op.seedPods("stuck", 2, 2);
  await op.api.delete(MiniClusters, NS, "stuck");
  op.sync();
  // The pods never go (no kubelet confirms their deletion): they are seeded back each time.
  const stubborn = () => op.seedPods("stuck", 2, 2);
  assert.ok((await op.reconcile("stuck")).requeueAfter);
  stubborn();
  op.time += 9_000;
  assert.deepEqual(await op.reconcile("stuck"), { requeueAfter: 1_000 }, "no later than the limit");
  stubborn();
  op.time += 1_000;
  await op.reconcile("stuck");
  assert.equal(op.miniCluster("stuck"), undefined);
  assert.ok(op.events("stuck").includes("CleanupTimedOut"));
});

Deno.test("reconcile lifecycle: a MiniCluster deleted and created again under its name gets its own Job at once", async () => {
  // The fake API server, like a control plane without a garbage collector, never removes the
  // `foregroundDeletion` finalizer: a Job deleted in the foreground would keep the name for good
  // (and, where a collector runs, until it got round to it), so the successor found a Job of its
  // name owned by its predecessor (NameTaken) instead of creating its own.
  const op = new FakeOperator();
  const old = await op.create("again", { size: 2 });
  await op.converge("again");
  await op.api.delete(MiniClusters, NS, "again");
  op.sync();
  await op.reconcile("again");
  assert.equal(op.miniCluster("again"), undefined, "the finalizer was removed");
  assert.equal(op.api.peek(Jobs, NS, "again"), undefined, "the Job went with its MiniCluster");
  op.sync();
  await op.reconcile("again");

  const fresh = await op.create("again", { size: 3 });
  assert.notEqual(fresh.metadata?.uid, old.metadata?.uid);
  await op.converge("again");
  const job = op.api.peek<Job>(Jobs, NS, "again");
  assert.equal(
    job?.metadata?.ownerReferences?.[0]?.uid,
    fresh.metadata?.uid,
    "the successor's Job",
  );
  assert.equal(job?.spec?.parallelism, 3);
  assert.equal(op.condition("again", "Unappliable")?.reason, "Applied");
});
