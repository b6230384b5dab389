/**
 * `deno run -A bench/children_pace.ts [--n=1000] [--size=4] [--workers=4] [--raw] [-- FLAGS]`:
 * how fast the children of N MiniClusters get made when nothing but those writes loads the
 * apiserver. On a control plane of its own (etcd and kube-apiserver only: no Job controller, so no
 * pods), N MiniClusters are created by 16 requests at once, as `deno task bench` creates them, and
 * timed from the first create to the last Job seen by a watch. Either our operator makes the
 * children (`--workers` is its --concurrency, FLAGS go to it as they are), or with `--raw` the raw
 * client of the bench does, with `--workers` workers (bench/raw_client.ts). One run per invocation, so that every run
 * gets a fresh apiserver and etcd.
 */
import { parseArgs } from "node:util";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import { KubeClient } from "../runtime/client/client.ts";
import { Jobs } from "../runtime/client/resources.ts";
import { MiniClusters } from "../api/resource.ts";
import { Watcher } from "../runtime/watch/watcher.ts";
import { installCrds } from "../testing/crds.ts";
import { OperatorProcess } from "../testing/operator_process.ts";
import { startPrivateCluster } from "../testing/private_cluster.ts";
import { benchMiniCluster, createNamespace, pool } from "./cluster_state.ts";
import { rawCreates } from "./raw_client.ts";

const CREATE_CONCURRENCY = 16;
const NAMESPACE = "pace";

/**
 * Resolves once `n` Jobs have been seen, through a watch started before the creates: a poll would
 * list every Job again and again, load on the apiserver whose pace is measured.
 */
function jobsSeen(jobs: Watcher<Job>, n: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (jobs.store.size < n) return;
      unsubscribe();
      resolve();
    };
    const unsubscribe = jobs.store.subscribe(check);
    check();
  });
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      n: { type: "string", default: "1000" },
      size: { type: "string", default: "4" },
      workers: { type: "string", default: "4" },
      raw: { type: "boolean", default: false },
    },
  });
  const n = Number(values.n), size = Number(values.size), workers = Number(values.workers);
  const kubeconfig = await startPrivateCluster({
    prefix: "minicluster-children-pace-",
    controlPlaneOnly: true,
  });
  await installCrds(kubeconfig);
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    await createNamespace(client, NAMESPACE);
    const miniClusters = Array.from(
      { length: n },
      (_, i) => benchMiniCluster(`mc-${i}`, NAMESPACE, size),
    );
    if (values.raw) {
      const run = await rawCreates(client, miniClusters, {
        createConcurrency: CREATE_CONCURRENCY,
        concurrency: workers,
      });
      console.log(
        `raw client, ${workers} workers: creates ${(run.miniClustersMs / 1000).toFixed(2)} s, ` +
          `every Job ${(run.ms / 1000).toFixed(2)} s`,
      );
    } else {
      const operator = await OperatorProcess.start({
        kubeconfig,
        namespaces: [NAMESPACE],
        concurrency: workers,
        args: positionals,
      });
      const jobs = new Watcher<Job>(client, Jobs, { namespaces: [NAMESPACE] });
      jobs.start();
      try {
        await operator.ready();
        await jobs.store.ready;
        const cpu0 = operator.cpuSeconds();
        const t0 = performance.now();
        await pool(miniClusters, CREATE_CONCURRENCY, async (mc) => {
          await client.create(MiniClusters, mc);
        });
        const creates = performance.now() - t0;
        await jobsSeen(jobs, n);
        const every = performance.now() - t0;
        console.log(
          `operator, ${workers} workers ${positionals.join(" ")}: creates ` +
            `${(creates / 1000).toFixed(2)} s, every Job ${(every / 1000).toFixed(2)} s, ` +
            `operator CPU ${(operator.cpuSeconds() - cpu0).toFixed(1)} s`,
        );
      } finally {
        await jobs.stop();
        await operator.kill();
      }
    }
  } finally {
    client.close();
  }
}
