// The CURVE certificate by reference on a real apiserver (issue 27, defect 6): the CRD defaults the
// key, a Secret that comes later is waited for (no generated key, no Job meanwhile), then copied,
// and the MiniCluster never holds the secret key.
import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import {
  curveCertFromSecret,
  generateCurveCertificate,
} from "../../controllers/minicluster/children/curve.ts";
import { CURVE_SECRET_RECHECK_MS } from "../../controllers/minicluster/policy/curve_source.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { Jobs, Secrets } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, integrationTest } from "../harness.ts";
import {
  curveSecret,
  getMiniCluster,
  miniCluster,
  waitForCondition,
  withOperator,
} from "./minicluster_operator.ts";

integrationTest(
  "curve ref: the certificate Secret is waited for, then copied; the MiniCluster holds no key",
  async (env) => {
    const { client, namespace } = env;
    const cert = await generateCurveCertificate({ name: "shared" });
    await withOperator(env, async () => {
      const mc = miniCluster("ref", namespace, {
        flux: { curveCertSecretRef: { name: "shared-cert" } },
      });
      await client.create(MiniClusters, mc);
      const stored = await getMiniCluster(env, "ref");
      assert.equal(stored.spec.flux?.curveCertSecretRef?.key, "curve.cert", "the CRD's default");

      const missing = await waitForCondition(
        env,
        "ref",
        "Unappliable",
        "True",
        "CurveCertSecretMissing",
      );
      assert.match(missing.message ?? "", /Secret shared-cert does not exist/);
      for (const [rt, name] of [[Jobs, "ref"], [Secrets, "ref-curve-cert"]] as const) {
        await assert.rejects(client.get(rt, namespace, name), isNotFound, `${name} waits`);
      }

      await client.create<Secret>(Secrets, {
        metadata: { name: "shared-cert", namespace },
        stringData: { "curve.cert": cert.text },
      });
      await eventually(() => client.get<Job>(Jobs, namespace, "ref"), {
        timeoutMs: CURVE_SECRET_RECHECK_MS + 20_000,
        intervalMs: 250,
      });
      assert.equal(curveCertFromSecret(await curveSecret(env, mc)), cert.text);
      await waitForCondition(env, "ref", "Unappliable", "False");
      const after = await getMiniCluster(env, "ref");
      assert.ok(!JSON.stringify(after).includes(cert.secretKey), "no key in the MiniCluster");
    });
  },
  { timeoutMs: 90_000 },
);
