// Spec changes reach the children: the entrypoint ConfigMap follows (and a hand edit is undone), a new container with ports
// gets its Service (and loses it again), a Job template change is reported by condition and
// event naming the fields, and Job labels still follow.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { ConfigMaps, Jobs, Services } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, integrationTest } from "../harness.ts";
import { eventsFor, miniCluster, waitForCondition, withOperator } from "./minicluster_operator.ts";

integrationTest(
  "minicluster update: ConfigMap, Services and Job labels follow the spec",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async () => {
      await client.create(MiniClusters, miniCluster("upd", namespace, { size: 2, tasks: 1 }));
      const before = await eventually(
        () => client.get<ConfigMap>(ConfigMaps, namespace, "upd-entrypoint"),
        { timeoutMs: 20_000 },
      );
      await eventually(() => client.get<Job>(Jobs, namespace, "upd"));
      await waitForCondition(env, "upd", "Unappliable", "False");

      // A script-only change: the ConfigMap follows, the Job stays as it is.
      await client.patch(MiniClusters, namespace, "upd", {
        spec: { tasks: 4, logging: { quiet: true } },
      }, "merge");
      await eventually(async () => {
        const cm = await client.get<ConfigMap>(ConfigMaps, namespace, "upd-entrypoint");
        assert.notEqual(cm.data?.["wait-0"], before.data?.["wait-0"]);
      });
      await waitForCondition(env, "upd", "Unappliable", "False");

      // A hand edit of a script is undone (the cache keeps only digests of the values, and the
      // digest of the edited value differs from the desired one's).
      const wanted = (await client.get<ConfigMap>(ConfigMaps, namespace, "upd-entrypoint"))
        .data?.["wait-0"];
      await client.patch(ConfigMaps, namespace, "upd-entrypoint", {
        data: { "wait-0": "#!/bin/sh\necho tampered\n" },
      }, "merge");
      await eventually(async () => {
        const cm = await client.get<ConfigMap>(ConfigMaps, namespace, "upd-entrypoint");
        assert.equal(cm.data?.["wait-0"], wanted);
      });

      // A new sidecar with ports: its Service appears; the pod template of the running Job cannot
      // change, which is reported with the fields; jobLabels still reach the Job.
      await client.patch(MiniClusters, namespace, "upd", {
        spec: {
          containers: [
            { image: "ghcr.io/rse-ops/accounting:app-latest", command: "hostname", runFlux: true },
            { name: "db", image: "postgres", ports: [5432] },
          ],
          jobLabels: { team: "hpc" },
        },
      }, "merge");
      await eventually(() => client.get(Services, namespace, "upd-db"));
      const c = await waitForCondition(env, "upd", "Unappliable", "True", "JobFieldsImmutable");
      assert.match(c.message, /spec\.template\.spec\.containers\[name=db\]/);
      await eventually(async () => {
        const job = await client.get<Job>(Jobs, namespace, "upd");
        assert.equal(job.metadata?.labels?.team, "hpc");
      });
      await eventually(async () => {
        const events = await eventsFor(env, "upd");
        const e = events.find((e) => e.reason === "JobFieldsImmutable");
        assert.ok(e, "an event for the immutable fields");
        assert.equal(e.type, "Warning");
        assert.match(e.message ?? "", /containers\[name=db\]/);
      });

      // Removing the sidecar removes its Service; the Job template matches again.
      await client.patch(MiniClusters, namespace, "upd", {
        spec: {
          containers: [{ image: "ghcr.io/rse-ops/accounting:app-latest", command: "hostname" }],
        },
      }, "merge");
      await eventually(async () => {
        try {
          await client.get(Services, namespace, "upd-db");
          throw new Error("Service upd-db still exists");
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
      });
      await waitForCondition(env, "upd", "Unappliable", "False");
    });
  },
  { timeoutMs: 90_000 },
);
