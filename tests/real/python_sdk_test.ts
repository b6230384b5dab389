// The Go Flux Operator's Python SDK (fluxoperator 0.2.0) drives a MiniCluster whose Flux brokers
// really run: made with the SDK's models (tests/python_sdk/recipe.py), then every helper of its
// FluxOperator on it. What the helpers returned is checked against the pods, their logs and the
// Job as kubectl reads them.

import assert from "node:assert/strict";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import { FLUX_APP_IMAGE, FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
import { REAL_NODE_LABEL } from "../../hack/cluster/real_node_config.ts";
import { runSdkScript, scriptResult, type SdkRun } from "../../testing/python_sdk.ts";
import { eventually } from "../harness.ts";
import { kubectl, REAL_NAMESPACE, realTest } from "./env.ts";

interface Helpers {
  wait_pods: string[];
  broker_pod: string;
  load_pods: string[];
  load_broker_pod: string;
  resource_list: string;
  execute: string;
  resource_list_seconds: number;
  stream_output: string[];
  stream_output_file: string;
  stream_output_seconds: number;
}

function succeeded(run: SdkRun): SdkRun {
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  return run;
}

/** `flux resource list` → the NNODES of a state ("free", "down", ...). */
function nodesIn(resourceList: string, state: string): number | undefined {
  const line = resourceList.split("\n").find((l) => l.trim().startsWith(`${state} `));
  return line === undefined ? undefined : Number(line.trim().split(/\s+/)[1]);
}

/** Lines without surrounding blanks (the SDK strips each line it writes), empty ones dropped. */
const trimmedLines = (lines: string[]) => lines.map((l) => l.trim()).filter((l) => l !== "");

realTest(
  "real: the Python SDK makes a size-2 MiniCluster, execs flux resource list on its lead broker, " +
    "streams its log, and deletes it",
  async (env) => {
    const name = "pysdk";
    const opts = { kubeconfig: env.kubeconfig, timeoutMs: 200_000 };
    try {
      const helpers = scriptResult<Helpers>(succeeded(
        await runSdkScript("operator_helpers.py", [
          "real",
          REAL_NAMESPACE,
          name,
          FLUX_APP_IMAGE,
          FLUX_VIEW_IMAGE,
          REAL_NODE_LABEL,
        ], opts),
      ));
      const pods = await env.pods(name); // by completion index
      assert.equal(pods.length, 2);
      // wait_pods waited for this MiniCluster's two pods; get_broker_pod found index 0.
      assert.deepEqual(helpers.wait_pods, pods.map((p) => p.metadata!.name!).sort());
      assert.equal(helpers.broker_pod, pods[0].metadata!.name);
      assert.deepEqual(helpers.load_pods, helpers.wait_pods);
      assert.equal(helpers.load_broker_pod, helpers.broker_pod);

      // kubectl_exec ran `flux resource list` in the lead broker: both brokers are up.
      assert.equal(nodesIn(helpers.resource_list, "free"), 2, helpers.resource_list);
      // FluxBrokerMiniCluster.execute sends a command to the lead broker the same way.
      assert.equal(nodesIn(helpers.execute, "free"), 2, helpers.execute);

      // stream_output followed the lead broker's log to its end: the same lines as kubectl's,
      // in its return value and in the file it wrote, through the line the script printed once
      // kubectl_exec had let it go on.
      const log = await env.logs(helpers.broker_pod, name);
      assert.match(log, /^waiting-for-sdk$/m, log);
      assert.match(log, /^sdk-done$/m, log);
      assert.deepEqual(trimmedLines(helpers.stream_output), trimmedLines(log.split("\n")));
      assert.deepEqual(
        trimmedLines(helpers.stream_output_file.split("\n")),
        trimmedLines(log.split("\n")),
      );

      // The brokers then finished: the Job completes once the follower has exited too.
      await eventually(async () => {
        const job = JSON.parse(
          await kubectl(["-n", REAL_NAMESPACE, "get", "job", name, "-o", "json"]),
        );
        const complete = job.status?.conditions?.some((c: Condition) =>
          c.type === "Complete" && c.status === "True"
        );
        if (!complete) throw new Error(`job ${name} not Complete: ${JSON.stringify(job.status)}`);
      }, { timeoutMs: 90_000, intervalMs: 1000 });
      console.log(
        `  SDK: pods waited for, both brokers free by exec at ${helpers.resource_list_seconds} s, ` +
          `log streamed to its end at ${helpers.stream_output_seconds} s`,
      );

      // delete_minicluster returns once the pods are gone; the MiniCluster goes with them.
      succeeded(await runSdkScript("operator_helpers.py", ["delete", REAL_NAMESPACE, name], opts));
      assert.deepEqual(await env.pods(name), []);
      await eventually(async () => {
        const left = await kubectl([
          "-n",
          REAL_NAMESPACE,
          "get",
          `minicluster/${name}`,
          `job/${name}`,
          "--ignore-not-found",
          "-o",
          "name",
        ]);
        if (left.trim() !== "") throw new Error(`still there: ${left}`);
      }, { timeoutMs: 60_000, intervalMs: 1000 });
    } finally {
      // The SDK made it, so realTest does not know it: removed here also when an assertion failed.
      await kubectl(["-n", REAL_NAMESPACE, "delete", "minicluster", name, "--ignore-not-found"])
        .catch(() => {});
    }
  },
  { timeoutMs: 300_000 },
);
