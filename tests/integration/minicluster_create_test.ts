// Creating a MiniCluster: every child exists with the right content and ownership, the status
// reports observations, and (on the full cluster) Ready turns True once the pods run.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import { ConfigMaps, Jobs, Secrets, Services } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import { FINALIZER } from "../../controllers/minicluster/children/names.ts";
import { buildWorkspace } from "../../controllers/minicluster/workspace/workspace.ts";
import { fluxViewOf } from "../../controllers/minicluster/children/job.ts";
import { eventually, fullCluster, integrationTest } from "../harness.ts";
import {
  eventsFor,
  getMiniCluster,
  miniCluster,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

const KEEP_RUNNING = { "kwok.x-k8s.io/keep-running": "true" };

integrationTest("minicluster create: every child, owned, with the spec's content", async (env) => {
  const { client, namespace } = env;
  await withOperator(env, async () => {
    const created = await client.create(
      MiniClusters,
      miniCluster("flux", namespace, { size: 2, maxSize: 3, pod: { annotations: KEEP_RUNNING } }),
    );
    const uid = created.metadata!.uid!;
    const owned = (
      o: { metadata?: { ownerReferences?: { uid: string; controller?: boolean }[] } },
    ) => assert.ok(o.metadata?.ownerReferences?.some((r) => r.uid === uid && r.controller));

    const job = await eventually(() => client.get<Job>(Jobs, namespace, "flux"), {
      timeoutMs: 20_000,
    });
    owned(job);
    assert.equal(job.spec?.completionMode, "Indexed");
    assert.equal(job.spec?.parallelism, 2);
    assert.equal(job.spec?.completions, 2);
    assert.equal(job.spec?.template.spec?.subdomain, "flux");
    assert.equal(job.spec?.template.metadata?.labels?.["hpa-selector"], "flux");

    const cm = await client.get<ConfigMap>(ConfigMaps, namespace, "flux-entrypoint");
    owned(cm);
    assert.ok(cm.data?.["wait-0"], "a wait script for the Flux container");
    // Where the nodes mount the view (docs/flux-view.md), the Flux container writes the
    // configuration; where it is copied, the flux-view init container does.
    const mounted = fluxViewOf(job) === "ImageVolume";
    assert.equal(cm.data?.["flux-view"] === undefined, mounted, "an init script where copied");
    const configuring = cm.data?.[mounted ? "wait-0" : "flux-view"] ?? "";
    assert.match(configuring, /flux-\[0-2\]/, "the hostlist is written for maxSize");
    assert.equal(cm.data?.["curve.cert"], undefined, "the certificate is not in a ConfigMap");

    const secret = await client.get<Secret>(Secrets, namespace, "flux-curve-cert");
    owned(secret);
    const cert = atob(secret.data!["curve.cert"]);
    assert.match(cert, /public-key = "[^"]{40}"/);
    assert.match(cert, /secret-key = "[^"]{40}"/);

    const svc = await client.get<Service>(Services, namespace, "flux");
    owned(svc);
    assert.equal(svc.spec?.clusterIP, "None");

    const ws = await client.get<MiniClusterWorkspace>(MiniClusterWorkspaces, namespace, "flux");
    owned(ws);
    // The view's mode the nodes allowed (docs/flux-view.md), the same as the Job's.
    assert.deepEqual(ws.spec, { maxSize: 3, size: 2, fluxView: fluxViewOf(job) });

    const mc = await eventually(async () => {
      const mc = await getMiniCluster(env, "flux");
      if (!mc.status?.selector) throw new Error("no status yet");
      return mc;
    });
    assert.ok(mc.metadata?.finalizers?.includes(FINALIZER));
    assert.equal(mc.status?.selector, "hpa-selector=flux");
    assert.equal(mc.status?.maximumSize, 3);
    assert.equal(mc.status?.observedGeneration, mc.metadata?.generation);
    assert.equal(mc.spec.size, 2);

    if (fullCluster()) {
      await waitForCondition(env, "flux", "Ready", "True", "PodsReady", 60_000);
      const ready = await getMiniCluster(env, "flux");
      assert.equal(ready.status?.readyPods, 2);
      assert.equal(ready.status?.size, 2);
      assert.equal(ready.status?.jobid, job.metadata?.uid);
      await eventually(async () => {
        const events = await eventsFor(env, "flux");
        assert.ok(events.some((e) => e.reason === "PodsReady" && e.type === "Normal"));
      });
    } else {
      await waitForCondition(env, "flux", "Ready", "False", "PodsNotReady");
    }
  });
}, { timeoutMs: 120_000 });

integrationTest("minicluster create: services pod and per-container Services", async (env) => {
  const { client, namespace } = env;
  await withOperator(env, async () => {
    await client.create(
      MiniClusters,
      miniCluster("svc", namespace, {
        containers: [
          { image: "app", command: "hostname", runFlux: true },
          { name: "db", image: "postgres", ports: [5432] },
        ],
        services: [{ name: "api", image: "nginx", ports: [80] }],
      }),
    );
    const db = await eventually(() => client.get<Service>(Services, namespace, "svc-db"), {
      timeoutMs: 20_000,
    });
    assert.deepEqual(db.spec?.ports?.map((p) => p.port), [5432]);
    await eventually(() =>
      client.get(
        { group: "", version: "v1", plural: "pods", kind: "Pod", namespaced: true },
        namespace,
        "svc-services",
      )
    );
  });
}, { timeoutMs: 90_000 });

integrationTest(
  "minicluster create: a workspace that exists before our finalizer (removed by hand) decides",
  async (env) => {
    const { client, namespace } = env;
    // The MiniCluster exists before any operator runs; its workspace says maxSize 5, not the
    // spec's 3. The first reconcile guesses the spec's values and writes the children with the
    // workspace in one round trip; it must then rebuild them from the workspace before the Job.
    const mc = await client.create(
      MiniClusters,
      miniCluster("adopt", namespace, { size: 2, maxSize: 3, pod: { annotations: KEEP_RUNNING } }),
    );
    // Without our labels, as an older operator version may have left it: the cache cannot see
    // it, so only the create's AlreadyExists tells.
    const ws = buildWorkspace(mc, { maxSize: 5, size: 2 });
    await client.create(MiniClusterWorkspaces, { ...ws, metadata: { ...ws.metadata, labels: {} } });
    await withOperator(env, async () => {
      const job = await eventually(() => client.get<Job>(Jobs, namespace, "adopt"), {
        timeoutMs: 20_000,
      });
      assert.equal(job.spec?.parallelism, 2);
      const cm = await client.get<ConfigMap>(ConfigMaps, namespace, "adopt-entrypoint");
      assert.match(cm.data!["flux-view"], /adopt-\[0-4\]/, "the hostlist is the workspace's");
      const ws = await client.get<MiniClusterWorkspace>(MiniClusterWorkspaces, namespace, "adopt");
      assert.equal(ws.spec.maxSize, 5);
      await waitForCondition(env, "adopt", "Unappliable", "False");
      const status = (await getMiniCluster(env, "adopt")).status as { maximumSize?: number };
      assert.equal(status.maximumSize, 5);
    });
  },
);
