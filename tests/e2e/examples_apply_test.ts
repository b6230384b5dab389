// Every file of examples/ applied as written (`kubectl apply --server-side -f`) on the KWOK
// cluster, with an operator watching the scenario's namespace: every object of the file is
// accepted, and every MiniCluster comes to what its example shows on nodes where containers run
// no program (KWOK completes a Job's pods after a second): Succeeded, Suspended for one created
// suspended, deleted for one with spec.cleanup. What runs inside the pods is for the real-node tests; here the files' objects, their
// children and their outcome are. Two things are added that a user's cluster has and KWOK's has
// not: a PersistentVolume bound to each claim (no provisioner here), and Kueue's objects only
// where Kueue runs (the suite's cluster; elsewhere that file's MiniCluster still runs, unqueued).
import assert from "node:assert/strict";
import { stringify } from "yaml";
import type { MiniCluster } from "../../api/mod.ts";
import { exampleDocs, exampleFiles, type KubeDoc } from "../../testing/examples.ts";
import { kubectl } from "../harness.ts";
import { MiniClusters } from "../../api/resource.ts";
import { isNotFound } from "../../runtime/client/errors.ts";
import { conditionOf, e2eTest, eventually } from "./env.ts";
import { kueueAvailable } from "./kueue_env.ts";

const KUEUE_KINDS = new Set(["ResourceFlavor", "ClusterQueue", "LocalQueue"]);
/** Kinds without a namespace that the examples create: deleted after the scenario. */
const CLUSTER_SCOPED = new Set(["ResourceFlavor", "ClusterQueue", "PriorityClass"]);

/** A volume bound in advance to a claim of the examples, as a provisioner would bind one. */
function volumeFor(namespace: string, claim: KubeDoc): KubeDoc {
  const spec = claim.spec as {
    accessModes: string[];
    resources: { requests: { storage: string } };
    storageClassName?: string;
  };
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: `${namespace}-${claim.metadata.name}` },
    spec: {
      capacity: { storage: spec.resources.requests.storage },
      accessModes: spec.accessModes,
      storageClassName: spec.storageClassName ?? "",
      persistentVolumeReclaimPolicy: "Retain",
      hostPath: { path: `/tmp/${namespace}/${claim.metadata.name}` },
      claimRef: { namespace, name: claim.metadata.name },
    },
  };
}

e2eTest(
  "e2e: every file of examples/ applies as written and its MiniClusters come to their outcome",
  async (env) => {
    const kueue = kueueAvailable();
    await env.startOperator();
    const created: KubeDoc[] = [];
    const dir = await Deno.makeTempDir({ prefix: "examples-" });
    try {
      const outcomes: { file: string; mc: MiniCluster }[] = [];
      const left: string[] = [];
      for (const file of exampleFiles()) {
        const docs = exampleDocs(file);
        const applied = docs.filter((d) => kueue || !KUEUE_KINDS.has(d.kind));
        left.push(...docs.filter((d) => !applied.includes(d)).map((d) => `${file}: ${d.kind}`));
        const volumes = docs.filter((d) => d.kind === "PersistentVolumeClaim")
          .map((claim) => volumeFor(env.namespace, claim));
        created.push(...volumes, ...applied.filter((d) => CLUSTER_SCOPED.has(d.kind)));
        const path = `${dir}/${file}`;
        await Deno.writeTextFile(
          path,
          [...volumes, ...applied].map((d) => stringify(d)).join("---\n"),
        );
        const out = await kubectl(env, "apply", "--server-side", "-f", path);
        assert.equal(out.trim().split("\n").length, volumes.length + applied.length, out);
        for (const d of applied) {
          if (d.kind === "MiniCluster") outcomes.push({ file, mc: d as unknown as MiniCluster });
        }
      }
      console.error(
        `[examples] ${exampleFiles().length} files applied, ${outcomes.length} MiniClusters` +
          (left.length ? `; without Kueue here, left out: ${left.join(", ")}` : ""),
      );
      const t0 = performance.now();
      for (const { file, mc } of outcomes) {
        const name = mc.metadata!.name!;
        const [type, reason] = mc.spec?.suspend
          ? ["Suspended", "Suspended"]
          : ["Succeeded", "JobComplete"];
        await eventually(async () => {
          const now = await env.client.get<MiniCluster>(MiniClusters, env.namespace, name)
            .catch((e) => {
              if (!isNotFound(e)) throw e;
            });
          // spec.cleanup: the operator deletes it once it succeeded.
          if (!now && mc.spec?.cleanup) return;
          if (!now) throw new Error(`examples/${file}: ${name} is gone`);
          const c = conditionOf(now, type);
          if (c?.status !== "True" || c.reason !== reason) {
            throw new Error(
              `examples/${file}: ${name} ${type} is ${c?.status}/${c?.reason} (${c?.message})`,
            );
          }
        }, { timeoutMs: 120_000, intervalMs: 500 }).catch(async (e) => {
          const seen = await kubectl(env, "get", "pods,pvc,job", "-o", "wide").catch(String);
          throw new Error(`${e.message}\n${seen}`);
        });
      }
      console.error(
        `[examples] every MiniCluster came to its outcome ${
          ((performance.now() - t0) / 1000).toFixed(1)
        } s after the last file was applied`,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
      // The MiniClusters (and with their Jobs, Kueue's Workloads) first, so that the cluster-wide
      // objects go at once: another scenario may make a queue of the same name right after.
      await kubectl(env, "delete", "minicluster", "--all", "--wait=true", "--timeout=60s");
      await kubectl(env, "delete", "pvc", "--all", "--wait=true", "--timeout=60s");
      for (const d of created.reverse()) {
        await kubectl(
          env,
          "delete",
          KUEUE_KINDS.has(d.kind) ? `${d.kind.toLowerCase()}.kueue.x-k8s.io` : d.kind,
          d.metadata.name,
          "--ignore-not-found",
          "--wait=true",
          "--timeout=60s",
        );
      }
    }
  },
  { timeoutMs: 300_000 },
);
