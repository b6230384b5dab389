// A spec that passes the CRD's validation but cannot be built: condition and event, no children,
// and another MiniCluster in the same namespace is reconciled as usual. Fixing the spec recovers.
import assert from "node:assert/strict";
import type { ConfigMap, Service } from "kubernetes-types/core/v1.d.ts";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { ConfigMaps, Jobs, Services } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, integrationTest } from "../harness.ts";
import {
  eventsFor,
  miniCluster,
  quiescent,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

/** Two containers define volume "data" differently: valid for the CRD, impossible in one pod. */
function conflictingVolumes(name: string, namespace: string) {
  return miniCluster(name, namespace, {
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
}

async function absent(fn: () => Promise<unknown>) {
  try {
    await fn();
  } catch (e) {
    if (isNotFound(e)) return;
    throw e;
  }
  throw new Error("exists");
}

integrationTest(
  "minicluster invalid: condition and event, no children, others unaffected",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async () => {
      await client.create(MiniClusters, conflictingVolumes("bad", namespace));
      await client.create(MiniClusters, miniCluster("good", namespace));

      const c = await waitForCondition(env, "bad", "SpecInvalid", "True", "ValidationFailed");
      assert.match(c.message, /volume "data" is defined differently/);
      await waitForCondition(env, "bad", "Ready", "False", "SpecInvalid");
      await eventually(async () => {
        const events = await eventsFor(env, "bad");
        assert.ok(events.some((e) => e.reason === "ValidationFailed" && e.type === "Warning"));
      });

      await eventually(() => client.get<Job>(Jobs, namespace, "good"), { timeoutMs: 20_000 });
      await waitForCondition(env, "good", "SpecInvalid", "False");

      await absent(() => client.get<Job>(Jobs, namespace, "bad"));
      await absent(() => client.get<ConfigMap>(ConfigMaps, namespace, "bad-entrypoint"));
      await absent(() => client.get<Service>(Services, namespace, "bad"));

      // Fixing the spec recovers.
      await client.patch(MiniClusters, namespace, "bad", {
        spec: {
          containers: [{
            image: "app",
            command: "hostname",
            volumes: { data: { path: "/data", emptyDir: true } },
          }],
        },
      }, "merge");
      await waitForCondition(env, "bad", "SpecInvalid", "False", "SpecValid");
      await eventually(() => client.get<Job>(Jobs, namespace, "bad"), { timeoutMs: 20_000 });
    });
  },
  { timeoutMs: 90_000 },
);

integrationTest(
  "minicluster invalid: an API rejection is a condition and event with the API's message",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async (op) => {
      // The CRD accepts any environment map key; the Job's validation refuses '=' in a name.
      await client.create(
        MiniClusters,
        miniCluster("refused", namespace, {
          containers: [{ image: "app", command: "hostname", environment: { "A=B": "x" } }],
        }),
      );
      const c = await waitForCondition(env, "refused", "Unappliable", "True", "ApiError");
      assert.match(c.message, /422 Invalid: Job\.batch "refused" is invalid: .*env\[0\]\.name/);
      await eventually(async () => {
        const events = await eventsFor(env, "refused");
        const e = events.find((e) => e.reason === "ApiError");
        assert.ok(e, "an ApiError event");
        assert.equal(e.type, "Warning");
        assert.match(e.message ?? "", /a valid environment variable name/);
      });
      // The other children exist; the refused Job is not retried while nothing changes.
      await client.get(ConfigMaps, namespace, "refused-entrypoint");
      const attempts = () => op.writes().filter((w) => w.resource === "jobs.batch").length;
      await quiescent(op, 1_000);
      const before = attempts();
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(attempts(), before);
    });
  },
  { timeoutMs: 60_000 },
);

integrationTest(
  "minicluster invalid: flux mini (gone from flux-core) is named in the condition, no pods fail",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async () => {
      await client.create(
        MiniClusters,
        miniCluster("mini", namespace, {
          flux: { submitCommand: "flux mini submit" },
          containers: [{ image: "app", command: "hostname" }],
        }),
      );
      const c = await waitForCondition(env, "mini", "SpecInvalid", "True", "ValidationFailed");
      assert.match(
        c.message,
        /spec\.flux\.submitCommand runs "flux mini", which flux-core removed/,
      );
      await absent(() => client.get<Job>(Jobs, namespace, "mini"));
      // Dropping "mini" recovers.
      await client.patch(MiniClusters, namespace, "mini", {
        spec: { flux: { submitCommand: "flux submit" } },
      }, "merge");
      await waitForCondition(env, "mini", "SpecInvalid", "False", "SpecValid");
      await eventually(() => client.get<Job>(Jobs, namespace, "mini"), { timeoutMs: 20_000 });
    });
  },
  { timeoutMs: 60_000 },
);
