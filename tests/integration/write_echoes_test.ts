// A write's answer taken from its watch echo, against the real API server: the watch delivers each
// written object with exactly its write's answer text, and a write whose echo was read first is
// answered with the object already parsed from it, which is what parsing the answer gives. The
// manager's count on /metrics: tests/unit/echoed_answers_client_test.ts.
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { eventually, integrationTest } from "../harness.ts";

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
    const write = (i: number) =>
      client.apply<ConfigMap>(ConfigMaps, {
        metadata: { name: `c${i % 4}`, namespace },
        data: { i: String(i), big: "x".repeat(2_000 + i) },
      }, { fieldManager: "echo-test" });
    // Writes while the watch reads: whichever of answer and echo comes first, the answer is the
    // same object as parsing gives (managedFields and all).
    for (let i = 0; i < 20; i++) {
      const answer = await write(i);
      const live = await client.get<ConfigMap>(ConfigMaps, namespace, `c${i % 4}`);
      assert.deepEqual(answer, live, `answer ${i} is the stored object`);
      assert.ok(answer.metadata?.managedFields?.length, "with its managedFields");
    }
    await eventually(() => assert.equal(events.length, 20));
    console.log(`answers taken from their echo: ${echoed.length} of 20`);
    // Which comes first is a race (about half the time the echo, unloaded; fewer on a loaded
    // machine): more writes until one is, which shows the API server writes the same text to
    // the watch as to the answer. tests/unit/echoed_answers_client_test.ts sets the order.
    let writes = 20;
    while (echoed.length === 0 && writes < 400) await write(writes++);
    assert.ok(echoed.length >= 1, `none of ${writes} answers was taken from its echo`);
    assert.deepEqual([...new Set(echoed)], ["configmaps"]);
    console.log(`answers taken from their echo: ${echoed.length} of ${writes}`);
    abort.abort();
    await watching;
  } finally {
    abort.abort();
    client.close();
  }
}, { timeoutMs: 90_000 });
