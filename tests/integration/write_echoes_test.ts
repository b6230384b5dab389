// A write's answer taken from its watch echo, against the real API server: the watch delivers each
// written object with exactly its write's answer text, and a write whose echo was read first is
// answered with the object already parsed from it, which is what parsing the answer gives.
import assert from "node:assert/strict";
import { MiniClusters } from "../../api/resource.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { eventually, integrationTest } from "../harness.ts";
import { runManager } from "./in_process_manager.ts";
import { miniCluster } from "./minicluster_operator.ts";

function counted(metrics: string[], resource: string): number {
  const line = metrics.find((l) =>
    l.startsWith(`api_answers_echoed_total{resource="${resource}"}`)
  );
  return line ? Number(line.split(" ").pop()) : 0;
}

integrationTest("write echoes: an answer read after its echo is the echo's object", async (env) => {
  const { namespace } = env;
  const echoed: string[] = [];
  const client = await KubeClient.fromKubeconfig(env.kubeconfig, undefined, {
    onEchoedAnswer: (resource) => echoed.push(resource),
  });
  const abort = new AbortController();
  const events: ConfigMap[] = [];
  try {
    const watching = (async () => {
      for await (
        const e of client.watch<ConfigMap>(ConfigMaps, { namespace, signal: abort.signal })
      ) {
        // Ours only: a full cluster's controller manager adds kube-root-ca.crt to the namespace.
        if (/^c\d$/.test(e.object.metadata?.name ?? "")) events.push(e.object);
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    // Writes while the watch reads: whichever of answer and echo comes first, the answer is the
    // same object as parsing gives (managedFields and all).
    for (let i = 0; i < 20; i++) {
      const answer = await client.apply<ConfigMap>(ConfigMaps, {
        metadata: { name: `c${i % 4}`, namespace },
        data: { i: String(i), big: "x".repeat(2_000 + i) },
      }, { fieldManager: "echo-test" });
      const live = await client.get<ConfigMap>(ConfigMaps, namespace, `c${i % 4}`);
      assert.deepEqual(answer, live, `answer ${i} is the stored object`);
      assert.ok(answer.metadata?.managedFields?.length, "with its managedFields");
    }
    await eventually(() => assert.equal(events.length, 20));
    abort.abort();
    await watching;
    console.log(`answers taken from their echo: ${echoed.length} of 20`);
  } finally {
    abort.abort();
    client.close();
  }

  // The operator's manager counts them per resource.
  const running = await runManager(env.kubeconfig, [`--namespaces=${namespace}`]);
  try {
    await env.client.create(MiniClusters, miniCluster("echo", namespace, { size: 1 }));
    const metrics = await eventually(() => {
      const m = running.metrics();
      const total = ["configmaps", "secrets", "services", "jobs.batch"]
        .reduce((n, r) => n + counted(m, r), 0);
      assert.ok(total >= 1, "a child's create was answered by its echo");
      return m;
    }, { timeoutMs: 30_000 });
    console.log(metrics.filter((l) => l.startsWith("api_answers_echoed_total{")).join("; "));
  } finally {
    await running.stop();
  }
}, { timeoutMs: 90_000 });
