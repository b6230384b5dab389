// Reconcile paths of a new MiniCluster on the fake API server: what a first reconcile writes, in
// how many requests, and that a converged one writes nothing.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import { FINALIZER } from "../../controllers/minicluster/children/names.ts";
import { TIMING } from "../../controllers/minicluster/timing.ts";
import { ConfigMaps, Jobs, Secrets, Services } from "../../runtime/client/resources.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import { FakeOperator, NS } from "../../testing/fake_operator.ts";

Deno.test("reconcile create: finalizer, then workspace and children together, then the Job; no reads; status waits", async () => {
  const op = new FakeOperator();
  // The nodes' runtimes are listed once a minute at most (flux_view_choice.ts): not in this test.
  await op.create("warm", { size: 1 });
  await op.reconcile("warm");
  const mc = await op.create("flux", { size: 2, maxSize: 3 });
  op.requestsSince();
  const action = await op.reconcile("flux");
  const requests = op.requestsSince();
  assert.deepEqual(requests.filter((r) => r.verb === "get" || r.verb === "list"), [], "no reads");
  const seen = requests.map((r) => `${r.verb} ${r.resource} ${r.name}`);
  assert.equal(seen[0], "patch miniclusters.flux-framework.org flux", "the finalizer first");
  assert.deepEqual(seen.slice(1, -1).sort(), [
    "apply configmaps flux-entrypoint",
    "apply miniclusterworkspaces.flux-framework.org flux",
    "apply secrets flux-curve-cert",
    "apply services flux",
  ], "then the workspace and what the pods mount, together");
  assert.equal(seen.at(-1), "apply jobs.batch flux", "the Job last, once the workspace confirms");
  assert.deepEqual(action, { requeueAfter: TIMING.firstStatusDelayMs }, "the status waits");
  assert.ok(op.miniCluster("flux")?.metadata?.finalizers?.includes(FINALIZER));

  const uid = mc.metadata!.uid;
  const owned = (
    o?: { metadata?: { ownerReferences?: { uid: string; controller?: boolean }[] } },
  ) => assert.ok(o?.metadata?.ownerReferences?.some((r) => r.uid === uid && r.controller));
  const job = op.api.peek<Job>(Jobs, NS, "flux");
  owned(job);
  assert.equal(job?.spec?.parallelism, 2);
  const workspace = op.api.peek<MiniClusterWorkspace>(MiniClusterWorkspaces, NS, "flux");
  owned(workspace);
  assert.deepEqual(workspace?.spec, { maxSize: 3, size: 2, fluxView: "Copy" });
  const entrypoint = op.api.peek<ConfigMap>(ConfigMaps, NS, "flux-entrypoint");
  owned(entrypoint);
  assert.match(entrypoint!.data!["flux-view"], /flux-\[0-2\]/, "the hostlist is for maxSize");
  const secret = op.api.peek<Secret>(Secrets, NS, "flux-curve-cert");
  owned(secret);
  assert.match(atob(secret!.data!["curve.cert"]), /secret-key = "[^"]{40}"/);
  owned(op.api.peek<Service>(Services, NS, "flux"));
});

Deno.test("reconcile create: the first status after the delay, then an unchanged MiniCluster costs nothing", async () => {
  const op = new FakeOperator();
  await op.create("flux", { size: 2 });
  await op.reconcile("flux");
  op.sync();
  // The Job has made its pods (a Job short of pods is asked about: create_failures.ts).
  op.seedPods("flux", 2, 0);
  op.requestsSince();
  op.time += TIMING.firstStatusDelayMs;
  await op.reconcile("flux");
  assert.deepEqual(op.writesSince(), ["apply miniclusters.flux-framework.org/status flux"]);
  assert.equal(op.condition("flux", "Ready")?.reason, "PodsNotReady");
  assert.equal(op.miniCluster("flux")?.status?.maximumSize, 2);

  // Before the cache has seen the status write, and after: zero requests.
  assert.deepEqual(await op.reconcile("flux"), {});
  op.sync();
  assert.deepEqual(await op.reconcile("flux"), {});
  assert.deepEqual(op.requestsSince(), [], "an unchanged MiniCluster costs no request at all");
});

Deno.test("reconcile create: a reconcile before the cache caught up rewrites no child (read-your-writes)", async () => {
  const op = new FakeOperator();
  await op.create("flux");
  await op.reconcile("flux");
  op.requestsSince();
  // The caches still show none of the children: our own writes stand in for them. The Job exists
  // now, so the status is due.
  await op.reconcile("flux");
  assert.deepEqual(op.writesSince(), ["apply miniclusters.flux-framework.org/status flux"]);
  await op.reconcile("flux");
  assert.deepEqual(op.requestsSince(), [], "nor the status, written a moment ago");
});
