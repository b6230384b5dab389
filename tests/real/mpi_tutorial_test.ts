// docs/mpi.md works as written: its first manifest (an MPI allreduce compiled in the MiniCluster,
// 6 ranks over 3 brokers) is applied as the page shows it, on the real nodes, and every rank must
// print the right sum.
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually } from "../harness.ts";
import { REAL_NAMESPACE, realTest } from "./env.ts";

const PAGE = new URL("../../docs/mpi.md", import.meta.url);

/** The page's first YAML block: the complete MiniCluster the tutorial starts with. */
function firstManifest(markdown: string): MiniCluster {
  const block = markdown.match(/```yaml\n([\s\S]*?)```/);
  if (!block) throw new Error("docs/mpi.md has no YAML block");
  return parse(block[1]) as MiniCluster;
}

realTest("real mpi: the first manifest of docs/mpi.md runs as written", async (env) => {
  const mc = firstManifest(await Deno.readTextFile(PAGE));
  const name = mc.metadata!.name!;
  await env.apply({ ...mc, metadata: { ...mc.metadata, namespace: REAL_NAMESPACE } });
  const end = await eventually(async () => {
    const got = await env.client.get<MiniCluster>(MiniClusters, REAL_NAMESPACE, name);
    const done = ((got.status?.conditions ?? []) as Condition[]).find((c) =>
      (c.type === "Succeeded" || c.type === "Failed") && c.status === "True"
    );
    if (!done) throw new Error(`${name} has not ended`);
    return done;
  }, { timeoutMs: 240_000, intervalMs: 1000 });
  assert.equal(end.type, "Succeeded", end.message);
  const pods = await env.pods(name);
  assert.equal(new Set(pods.map((p) => p.spec?.nodeName)).size, 2, "brokers on both real nodes");
  const lead = pods.find((p) =>
    p.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] === "0"
  )!;
  const log = await env.logs(lead.metadata!.name!, lead.spec!.containers[0].name);
  const ranks = mc.spec!.tasks!;
  const sum = (ranks * (ranks - 1)) / 2;
  for (let r = 0; r < ranks; r++) {
    assert.match(log, new RegExp(`^rank ${r} of ${ranks}: sum ${sum} \\(expected ${sum}\\)$`, "m"));
  }
});
