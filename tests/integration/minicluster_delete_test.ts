// Deleting a MiniCluster runs the finalizer: the Job goes with foreground propagation, the
// operator waits (requeues) until the MiniCluster's pods are gone, deletes the rest, emits an
// event and removes the finalizer. Nothing of the MiniCluster remains.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Event } from "kubernetes-types/core/v1.d.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import {
  ConfigMaps,
  Events,
  Jobs,
  Pods,
  Secrets,
  Services,
} from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MINICLUSTER_LABEL } from "../../controllers/minicluster/children/names.ts";
import { eventually, fullCluster, integrationTest } from "../harness.ts";
import { miniCluster, waitForCondition, withOperator } from "./minicluster_operator.ts";

integrationTest("minicluster delete: the finalizer leaves nothing behind", async (env) => {
  const { client, namespace } = env;
  await withOperator(env, async () => {
    await client.create(
      MiniClusters,
      miniCluster("gone", namespace, {
        size: 2,
        services: [{ name: "api", image: "nginx" }],
        pod: { annotations: { "kwok.x-k8s.io/keep-running": "true" } },
      }),
    );
    await eventually(() => client.get<Job>(Jobs, namespace, "gone"), { timeoutMs: 20_000 });
    if (fullCluster()) await waitForCondition(env, "gone", "Ready", "True", undefined, 60_000);

    await client.delete(MiniClusters, namespace, "gone");
    await eventually(async () => {
      try {
        await client.get(MiniClusters, namespace, "gone");
        throw new Error("the MiniCluster still exists");
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }, { timeoutMs: 60_000, intervalMs: 250 });

    const selector = `${MINICLUSTER_LABEL}=gone`;
    for (const rt of [ConfigMaps, Secrets, Services, Pods]) {
      const left = await client.list(rt, { namespace, labelSelector: selector });
      const live = left.items.filter((o) =>
        !(o as { metadata?: { deletionTimestamp?: string } }).metadata?.deletionTimestamp
      );
      assert.deepEqual(
        live.map((o) => (o as { metadata?: { name?: string } }).metadata?.name),
        [],
        `${rt.plural} left`,
      );
    }
    await eventually(async () => {
      try {
        const job = await client.get<Job>(Jobs, namespace, "gone");
        // Without a garbage collector (control plane only) a foreground deletion never finishes.
        if (fullCluster() || !job.metadata?.deletionTimestamp) throw new Error("the Job remains");
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }, { timeoutMs: 30_000 });
    const events = await client.list<Event>(Events, {
      namespace,
      fieldSelector: "involvedObject.name=gone",
    });
    assert.ok(events.items.some((e) => e.reason === "CleanedUp"), "a CleanedUp event");
  });
}, { timeoutMs: 120_000 });

integrationTest(
  "minicluster delete: cleanup true deletes the MiniCluster once its Job finished",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async () => {
      await client.create(
        MiniClusters,
        miniCluster("oneshot", namespace, {
          size: 2,
          cleanup: true,
          pod: { annotations: { "kwok.x-k8s.io/complete-after": "2s" } },
        }),
      );
      await eventually(async () => {
        try {
          await client.get(MiniClusters, namespace, "oneshot");
          throw new Error("the MiniCluster still exists");
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
      }, { timeoutMs: 90_000, intervalMs: 500 });
      const events = await client.list<Event>(Events, {
        namespace,
        fieldSelector: "involvedObject.name=oneshot",
      });
      assert.ok(events.items.some((e) => e.reason === "CleanupAfterCompletion"));
    });
  },
  { timeoutMs: 120_000, ignore: !fullCluster() },
);
