/**
 * `deno run -A bench/apply_cost.ts [--n=1000] [--rounds=4]`: what the apiserver pays for the way
 * the operator creates its children. On a control plane of its own (etcd and kube-apiserver only,
 * so no controller reacts to the objects), the children of N MiniClusters of size 1 (curve Secret,
 * entrypoint ConfigMap, headless Service, Job; the workspace needs our CRD and is left out) are
 * created by 4 concurrent requests, once by POST and once by server-side apply with a create-only
 * resourceVersion (as `runtime/controller/dependents.ts` creates them), each into a fresh namespace, the order
 * alternating over the rounds. Prints the wall time and the CPU seconds of kube-apiserver and etcd
 * (from /proc) per round.
 */
import { parseArgs } from "node:util";
import { dirname, join } from "node:path";
import { KubeClient } from "../runtime/client/client.ts";
import { CREATE_ONLY_RESOURCE_VERSION } from "../runtime/controller/dependents.ts";
import { MiniClusterWorkspaces } from "../api/workspace.ts";
import type { MiniCluster } from "../api/mod.ts";
import { FIELD_MANAGER } from "../controllers/minicluster/children/names.ts";
import { readCpuSeconds } from "../testing/operator_process.ts";
import { startPrivateCluster } from "../testing/private_cluster.ts";
import { sampleMiniCluster } from "../testing/sample_minicluster.ts";
import { type ChildObject, childObjects } from "./raw_client.ts";
import { createNamespace, pool } from "./cluster_state.ts";

const CONCURRENCY = 4;

async function children(n: number): Promise<ChildObject[]> {
  const out: ChildObject[] = [];
  for (let i = 0; i < n; i++) {
    const mc = sampleMiniCluster(`mc-${i}`, "x", { size: 1 });
    const owned = { ...mc, metadata: { ...mc.metadata, uid: crypto.randomUUID() } } as MiniCluster;
    out.push(...(await childObjects(owned)).filter((c) => c.rt !== MiniClusterWorkspaces));
  }
  return out;
}

function createAll(
  client: KubeClient,
  objects: ChildObject[],
  namespace: string,
  how: "post" | "apply",
): Promise<void> {
  return pool(objects, CONCURRENCY, async ({ rt, object }) => {
    const placed = { ...object, metadata: { ...object.metadata, namespace } };
    if (how === "post") await client.create(rt, placed);
    else {
      const createOnly = { ...placed.metadata, resourceVersion: CREATE_ONLY_RESOURCE_VERSION };
      await client.apply(rt, { ...placed, metadata: createOnly }, {
        fieldManager: FIELD_MANAGER,
        force: true,
      });
    }
  });
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { n: { type: "string", default: "1000" }, rounds: { type: "string", default: "4" } },
  });
  const n = Number(values.n), rounds = Number(values.rounds);
  const kubeconfig = await startPrivateCluster({
    prefix: "minicluster-apply-cost-",
    controlPlaneOnly: true,
  });
  const state = JSON.parse(await Deno.readTextFile(join(dirname(kubeconfig), "state.json")));
  const pids: number[] = [state.pids["kube-apiserver"], state.pids.etcd];
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    const objects = await children(n);
    for (let round = 0; round < rounds; round++) {
      for (const how of round % 2 ? ["apply", "post"] as const : ["post", "apply"] as const) {
        const namespace = `${how}-${round}`;
        await createNamespace(client, namespace);
        // The namespace controller is not running; a short pause lets the apiserver settle.
        await new Promise((r) => setTimeout(r, 2000));
        const before = pids.map(readCpuSeconds);
        const start = performance.now();
        await createAll(client, objects, namespace, how);
        const wall = (performance.now() - start) / 1000;
        const [apiserver, etcd] = pids.map((pid, i) => readCpuSeconds(pid) - before[i]);
        console.log(
          `${how.padEnd(5)} round ${round}: ${objects.length} objects in ${wall.toFixed(1)} s; ` +
            `CPU s: kube-apiserver ${apiserver.toFixed(2)}, etcd ${etcd.toFixed(2)}; ` +
            `${(1000 * (apiserver + etcd) / objects.length).toFixed(2)} ms per object`,
        );
      }
    }
  } finally {
    client.close();
  }
}
