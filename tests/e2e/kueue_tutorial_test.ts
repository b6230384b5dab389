// docs/kueue.md works as written on a cluster with the real Kueue: its queues, its two MiniClusters
// run one after the other, the urgent one preempts, and suspending it gives the quota back. The
// page's manifests are applied as they are, in the scenario's namespace instead of `default`, and
// what `kubectl get minicluster` prints at each step is the page's table: the same columns, and
// the same size, ready pods and status for each MiniCluster (not the age).
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { kubectl as kubectlWith } from "../../hack/kubectl.ts";
import { MiniClusters } from "../../api/resource.ts";
import {
  conditionOf,
  e2eTest,
  eventually,
  getMiniCluster,
  waitForCondition,
  waitForRunningPods,
} from "./env.ts";
import { kueueAvailable } from "./kueue_env.ts";
import { parseTable, type PrintedTable, tableDifferences, tablesOf } from "../printed_table.ts";

const PAGE = new URL("../../docs/kueue.md", import.meta.url);

/** The page's YAML blocks, in order, each as its objects. */
function manifests(markdown: string): Record<string, unknown>[][] {
  return [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) =>
    parseAllDocuments(m[1]).map((d) => d.toJSON() as Record<string, unknown>)
  );
}

e2eTest("e2e kueue: docs/kueue.md works as written", async (env) => {
  const markdown = await Deno.readTextFile(PAGE);
  const [queues, pair, urgent] = manifests(markdown);
  assert.ok(queues && pair && urgent, "the page has three YAML blocks");
  const [pairTable, preemptedTable] = tablesOf(markdown, "kubectl get minicluster");
  assert.ok(pairTable && preemptedTable, "the page shows two tables of kubectl get minicluster");
  // The page's `first` is the one Kueue admitted first, whichever that is here.
  const printedAs = (shown: PrintedTable, names: Record<string, string>) =>
    eventually(async () => {
      const printed = parseTable(
        await kubectlWith(env.kubeconfig, ["get", "minicluster", "--namespace", env.namespace]),
      );
      assert.deepEqual(tableDifferences(shown, printed, { names, ignore: ["AGE"] }), []);
    }, { timeoutMs: 30_000, intervalMs: 500 });
  const inScenario = (objs: Record<string, unknown>[]) =>
    objs.map((o) => {
      const metadata = o.metadata as { namespace?: string };
      return metadata.namespace === "default"
        ? { ...o, metadata: { ...metadata, namespace: env.namespace } }
        : o;
    });
  const apply = (objs: Record<string, unknown>[]) =>
    kubectlWith(
      env.kubeconfig,
      ["apply", "-f", "-"],
      inScenario(objs).map((o) => JSON.stringify(o)).join("\n"),
    );
  const clusterScoped = queues.filter((o) => !(o.metadata as { namespace?: string }).namespace)
    .map((o) => `${String(o.kind).toLowerCase()}/${(o.metadata as { name: string }).name}`);
  try {
    await apply(queues);
    await env.startOperator();
    await apply(pair);
    // Created together, either may be admitted first; the other waits.
    const [running, waiting] = await eventually(async () => {
      const ready = async (name: string) =>
        conditionOf(await getMiniCluster(env, name), "Ready")?.status === "True";
      if (await ready("first")) return ["first", "second"];
      if (await ready("second")) return ["second", "first"];
      throw new Error("neither MiniCluster is Ready yet");
    }, { timeoutMs: 60_000 });
    await waitForRunningPods(env, running, 2);
    const held = await waitForCondition(env, waiting, "Suspended", {
      status: "True",
      reason: "WaitingForAdmission",
    });
    assert.match(
      conditionOf(held, "Suspended")!.message ?? "",
      /suspended by queue user-queue.*insufficient unused quota for cpu in flavor default-flavor/,
    );
    const names = { first: running, second: waiting };
    await printedAs(pairTable, names);

    await apply(urgent);
    await waitForRunningPods(env, "urgent", 2, 60_000);
    await waitForCondition(env, running, "Ready", { status: "False", reason: "Preempted" });
    await waitForCondition(env, waiting, "Suspended", {
      status: "True",
      reason: "WaitingForAdmission",
    });
    await printedAs(preemptedTable, names);

    // Suspending the urgent one gives its quota back: one of the others runs again.
    await env.client.patch(
      MiniClusters,
      env.namespace,
      "urgent",
      { spec: { suspend: true } },
      "merge",
    );
    await waitForCondition(env, "urgent", "Suspended", { status: "True", reason: "Suspended" });
    await eventually(async () => {
      const ready = await Promise.all(
        ["first", "second"].map(async (name) =>
          conditionOf(await getMiniCluster(env, name), "Ready")?.status === "True"
        ),
      );
      assert.equal(ready.filter(Boolean).length, 1, "one of the two runs again");
    }, { timeoutMs: 60_000 });
  } finally {
    await kubectlWith(env.kubeconfig, [
      "delete",
      "--ignore-not-found",
      "--wait=false",
      ...clusterScoped.map((n) =>
        n.replace(/^(resourceflavor|clusterqueue)\//, "$1.kueue.x-k8s.io/")
      ),
    ]);
  }
}, { timeoutMs: 180_000, ignore: !kueueAvailable() });
