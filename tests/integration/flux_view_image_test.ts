// The Flux view from an image volume against a real API server (docs/flux-view.md): the Job with
// the view image as a volume is accepted and kept as built (the ImageVolume gate is on from 1.35,
// locked on from 1.36), the mode is kept in the workspace and shown in the status, and namespaces
// that enforce Pod Security baseline and restricted admit its pods.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { Jobs, Namespaces, Pods } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { type MiniClusterWorkspace, MiniClusterWorkspaces } from "../../api/workspace.ts";
import { fluxViewOf } from "../../controllers/minicluster/children/job.ts";
import { eventually, fullCluster, integrationTest } from "../harness.ts";
import { getMiniCluster, miniCluster, withOperator } from "./minicluster_operator.ts";

const VIEW_IMAGE = "ghcr.io/converged-computing/flux-view-rocky:tag-9";
/** What Pod Security restricted asks of every container and of the pod. */
const TIGHT = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } };
const TIGHT_POD = { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } };

integrationTest(
  "flux view: the API server keeps the Job's image volume; its pods pass Pod Security restricted",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async () => {
      await client.create(
        MiniClusters,
        miniCluster("mounted", namespace, {
          containers: [{
            image: "ghcr.io/rse-ops/accounting:app-latest",
            command: "hostname",
            securityContext: TIGHT,
          }],
          flux: {
            container: { viewFrom: "ImageVolume", image: VIEW_IMAGE, securityContext: TIGHT },
          },
          pod: { securityContext: TIGHT_POD },
        }),
      );
      const job = await eventually(() => client.get<Job>(Jobs, namespace, "mounted"), {
        timeoutMs: 20_000,
      });
      // Stored as built: an API server without the gate would have dropped `image` (and then
      // refused a volume without a source).
      const spec = job.spec!.template.spec!;
      const volume = spec.volumes!.find((v) => v.name === "flux-view-image") as
        | { image?: { reference?: string; pullPolicy?: string } }
        | undefined;
      assert.deepEqual(volume?.image, { reference: VIEW_IMAGE, pullPolicy: "IfNotPresent" });
      assert.equal(spec.initContainers, undefined, "no init container copies the view");
      const mounts = spec.containers[0].volumeMounts!.filter((m) => m.name === "flux-view-image");
      assert.deepEqual(mounts.map((m) => [m.mountPath, m.subPath, m.readOnly]), [
        ["/opt/views", "opt/views", true],
        ["/opt/software", "opt/software", true],
      ]);
      assert.equal(fluxViewOf(job), "ImageVolume");

      const ws = await client.get<MiniClusterWorkspace>(
        MiniClusterWorkspaces,
        namespace,
        "mounted",
      );
      assert.equal(ws.spec.fluxView, "ImageVolume", "the mode is kept with the sizes");
      await eventually(async () => {
        const mc = await getMiniCluster(env, "mounted");
        assert.equal(mc.status?.fluxView, "ImageVolume");
      }, { timeoutMs: 20_000 });

      // Pods of that template, as the Job controller makes them, in namespaces that enforce each
      // level (server-side dry run: Pod Security Admission judges them, nothing is stored).
      const pod: Pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: "mounted-0-judged",
          namespace,
          labels: job.spec!.template.metadata?.labels,
        },
        spec,
      };
      for (const level of ["baseline", "restricted"]) {
        await client.patch(Namespaces, undefined, namespace, {
          metadata: { labels: { "pod-security.kubernetes.io/enforce": level } },
        }, "merge");
        const admitted = await client.create<Pod>(Pods, pod, { dryRun: true });
        assert.ok(
          admitted.spec?.volumes?.some((v) => v.name === "flux-view-image"),
          `${level}: admitted with the image volume`,
        );
      }
      // The check is real: a pod that breaks restricted is refused in the same namespace.
      const loose: Pod = {
        ...pod,
        spec: {
          ...spec,
          securityContext: {},
          containers: [{ ...spec.containers[0], securityContext: {} }],
        },
      };
      await assert.rejects(client.create<Pod>(Pods, loose, { dryRun: true }), /restricted/);
    });
  },
  { timeoutMs: 60_000 },
);

integrationTest(
  "flux view: Auto copies where no node can mount the view (the private control plane, KWOK)",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async () => {
      await client.create(MiniClusters, miniCluster("auto", namespace, { size: 1 }));
      const job = await eventually(() => client.get<Job>(Jobs, namespace, "auto"), {
        timeoutMs: 20_000,
      });
      // The nodes here are KWOK's (a full cluster) or none; real nodes may mount it.
      if (!fullCluster()) assert.equal(fluxViewOf(job), "Copy");
      const ws = await client.get<MiniClusterWorkspace>(MiniClusterWorkspaces, namespace, "auto");
      assert.equal(ws.spec.fluxView, fluxViewOf(job), "the workspace holds the Job's mode");
    });
  },
  { timeoutMs: 60_000 },
);
