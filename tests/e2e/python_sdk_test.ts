/**
 * The Go Flux Operator's Python SDK (fluxoperator 0.2.0) drives a MiniCluster of this operator on
 * KWOK: made with the SDK's models (tests/python_sdk/recipe.py), its FluxOperator's wait_pods and
 * get_broker_pod (and FluxBrokerMiniCluster.load) name the pods that run, and delete_minicluster
 * returns once they are gone. What
 * needs Flux to run (kubectl_exec, stream_output) is in tests/real/python_sdk_test.ts.
 */
import assert from "node:assert/strict";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { runSdkScript, scriptResult, type SdkRun } from "../../testing/python_sdk.ts";
import { e2eTest, eventually, podsOf, waitForRunningPods } from "./env.ts";

interface Helpers {
  wait_pods: string[];
  wait_pods_phases: string[];
  broker_pod: string;
  load_pods: string[];
  load_broker_pod: string;
}

function succeeded(run: SdkRun): SdkRun {
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  return run;
}

e2eTest(
  "python SDK: wait_pods and get_broker_pod and FluxBrokerMiniCluster.load name the running pods, delete_minicluster removes it",
  async (env) => {
    await env.startOperator();
    const name = "sdk";
    const opts = { kubeconfig: env.kubeconfig, timeoutMs: 150_000 };
    const helpers = scriptResult<Helpers>(
      succeeded(await runSdkScript("operator_helpers.py", ["kwok", env.namespace, name], opts)),
    );

    // The pods the SDK waited for are the MiniCluster's pods, running; its broker is index 0.
    const running = await waitForRunningPods(env, name, 2);
    assert.deepEqual(helpers.wait_pods, running.map((p) => p.metadata!.name!).sort());
    assert.deepEqual(helpers.wait_pods_phases, ["Running", "Running"]);
    const lead = running.find((p) =>
      p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] === "0"
    );
    assert.equal(helpers.broker_pod, lead?.metadata?.name);
    // FluxBrokerMiniCluster.load, given what the API server returned on create, finds the same.
    assert.deepEqual(helpers.load_pods, helpers.wait_pods);
    assert.equal(helpers.load_broker_pod, lead?.metadata?.name);

    // delete_minicluster waits for the pods itself: none is left when it returns, and the
    // MiniCluster goes once the operator released its finalizer.
    succeeded(await runSdkScript("operator_helpers.py", ["delete", env.namespace, name], opts));
    assert.deepEqual((await podsOf(env, name)).map((p) => p.metadata?.name), []);
    await eventually(async () => {
      await assert.rejects(
        env.client.get<MiniCluster>(MiniClusters, env.namespace, name),
        (e) => isNotFound(e),
      );
    }, { timeoutMs: 30_000, intervalMs: 250 });
  },
  { timeoutMs: 240_000 },
);
