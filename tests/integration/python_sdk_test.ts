/**
 * The Go Flux Operator's Python SDK (PyPI fluxoperator 0.2.0, testing/python_sdk.ts) against the
 * real kube-apiserver and our CRD: a MiniCluster made of every model the SDK has, at its defaults,
 * is accepted with strict field validation (nothing unknown, nothing dropped) and deleted through
 * the SDK's FluxOperator; the SDK's own create and delete fail as docs/migrating-from-go.md says.
 */
import assert from "node:assert/strict";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { runSdkScript, scriptResult } from "../../testing/python_sdk.ts";
import { eventually, integrationTest } from "../harness.ts";

interface EveryModel {
  defects: Record<string, string | null>;
  sent: MiniCluster;
  stored: MiniCluster;
  deleted: boolean;
}

/** Every leaf of `part` is present with the same value in `whole`. */
function assertSubset(part: unknown, whole: unknown, path: string): void {
  if (Array.isArray(part)) {
    assert.ok(Array.isArray(whole) && whole.length === part.length, `${path}: list differs`);
    part.forEach((v, i) => assertSubset(v, whole[i], `${path}[${i}]`));
  } else if (part !== null && typeof part === "object") {
    assert.ok(whole !== null && typeof whole === "object", `${path}: expected an object`);
    for (const [k, v] of Object.entries(part)) {
      assertSubset(v, (whole as Record<string, unknown>)[k], `${path}.${k}`);
    }
  } else {
    assert.deepEqual(whole, part, path);
  }
}

integrationTest(
  "python SDK: every model at its defaults is accepted as sent; the SDK's own create and delete fail",
  async (env) => {
    const run = await runSdkScript("every_model.py", [env.namespace, env.kubeconfig], {
      kubeconfig: env.kubeconfig,
      timeoutMs: 240_000,
    });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const result = scriptResult<EveryModel>(run);

    // What the SDK sends is what the API server keeps: strict validation found no unknown field,
    // and every value came back unchanged (the CRD only adds its defaults).
    assert.equal(result.sent.spec.containers[0].image, "ghcr.io/rse-ops/accounting:app-latest");
    assert.equal(result.sent.spec.deadlineSeconds, 31500000);
    assertSubset(result.sent.spec, result.stored.spec, "spec");

    // The defects the migration guide gives a recipe for.
    const d = result.defects;
    assert.match(d.create_minicluster ?? "", /^TypeError: argument of type 'NoneType'/);
    assert.match(
      d.create_minicluster_with_flux ?? "",
      /^TypeError: .*unexpected keyword argument 'flux_restful'/,
    );
    assert.match(d.model_as_body ?? "", /Input should be a valid dictionary/);
    assert.match(d.delete_without_crd_api ?? "", /^ConfigException: .*No configuration found/);

    // FluxOperator.delete_minicluster with crd_api= deleted it (at once here; later where an
    // operator of the shared cluster watches every namespace and holds its finalizer a moment).
    assert.equal(result.deleted, true);
    await eventually(async () => {
      await assert.rejects(
        env.client.get<MiniCluster>(MiniClusters, env.namespace, "every-model"),
        (e) => isNotFound(e),
      );
    }, { timeoutMs: 30_000, intervalMs: 250 });
  },
  { timeoutMs: 300_000 },
);
