// spec.pod.annotations on the real apiserver: an annotation scoped to one container (AppArmor's
// `container.apparmor.security.beta.kubernetes.io/<container>`) is valid only on a pod that has
// that container, so each pod gets those of its own containers; one naming no container of the
// MiniCluster is SpecInvalid.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { Jobs, Pods } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, integrationTest } from "../harness.ts";
import { eventsFor, miniCluster, waitForCondition, withOperator } from "./minicluster_operator.ts";

const APPARMOR = "container.apparmor.security.beta.kubernetes.io/";

integrationTest(
  "pod annotations: an AppArmor annotation goes on the pod that has its container, and both pods are created",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async () => {
      await client.create(
        MiniClusters,
        miniCluster("aa", namespace, {
          services: [{ name: "api", image: "nginx" }],
          pod: {
            annotations: {
              [`${APPARMOR}aa`]: "runtime/default", // the Flux container, named after the MiniCluster
              [`${APPARMOR}api`]: "runtime/default", // the services pod's container
              "example.com/note": "every pod",
            },
          },
        }),
      );
      // Both writes were accepted: nothing is unappliable (a refused pod would say so here, with
      // the apiserver's message).
      await waitForCondition(env, "aa", "Unappliable", "False", undefined, 30_000);
      await waitForCondition(env, "aa", "SpecInvalid", "False");

      const pod = await eventually(() => client.get<Pod>(Pods, namespace, "aa-services"));
      const podAnnotations = pod.metadata?.annotations ?? {};
      assert.equal(podAnnotations[`${APPARMOR}api`], "runtime/default");
      assert.equal(podAnnotations[`${APPARMOR}aa`], undefined);
      assert.equal(podAnnotations["example.com/note"], "every pod");
      // The apiserver took the annotation as the container's profile.
      assert.equal(
        pod.spec?.containers[0].securityContext?.appArmorProfile?.type,
        "RuntimeDefault",
      );

      const job = await client.get<Job>(Jobs, namespace, "aa");
      const template = job.spec?.template.metadata?.annotations ?? {};
      assert.equal(template[`${APPARMOR}aa`], "runtime/default");
      assert.equal(template[`${APPARMOR}api`], undefined);
      assert.equal(template["example.com/note"], "every pod");
    });
  },
  { timeoutMs: 90_000 },
);

integrationTest(
  "pod annotations: an AppArmor annotation naming no container is SpecInvalid, no pod is made",
  async (env) => {
    const { client, namespace } = env;
    await withOperator(env, async () => {
      await client.create(
        MiniClusters,
        miniCluster("typo", namespace, {
          // The copied view, whatever the nodes allow: the message names its init container.
          flux: { container: { viewFrom: "Copy" } },
          services: [{ name: "api", image: "nginx" }],
          pod: { annotations: { [`${APPARMOR}apii`]: "runtime/default" } },
        }),
      );
      const c = await waitForCondition(env, "typo", "SpecInvalid", "True", "BuildFailed");
      assert.equal(
        c.message,
        `spec.pod.annotations: "${APPARMOR}apii" names container "apii", which no pod of the MiniCluster has (the Job's pods: flux-view, typo; the services pod: api)`,
      );
      await eventually(async () => {
        const events = await eventsFor(env, "typo");
        assert.ok(events.some((e) => e.reason === "BuildFailed" && e.type === "Warning"));
      });
      for (const [rt, name] of [[Jobs, "typo"], [Pods, "typo-services"]] as const) {
        await assert.rejects(client.get(rt, namespace, name), (e) => isNotFound(e));
      }
    });
  },
  { timeoutMs: 90_000 },
);
