// A write's answer taken from its watch echo, with the order of echo and answer set by the server
// (on a real API server it is a race: tests/integration/write_echoes_test.ts). Over each transport
// of KubeClient: an echo read first is the answer, the very object the watch gave, and counted; an
// answer read first is parsed and not counted. The manager counts echoes on /metrics.
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import { Manager } from "../../runtime/manager.ts";
import { parseOptions } from "../../controllers/minicluster/operator_flags.ts";
import { tokenKubeconfig } from "./token_kubeconfig.ts";

type ConfigMap = { metadata: { name: string; namespace: string }; data: Record<string, string> };

/**
 * An API server for one ConfigMap whose writes come back on the watch: with `echoFirst`, the echo
 * is sent and the answer held until `release()`; otherwise the answer goes first and the echo when
 * `echo()` is called.
 */
function server(echoFirst: boolean) {
  const stored: ConfigMap = {
    metadata: { name: "c", namespace: "default" },
    data: { big: "x".repeat(3_000) },
  };
  const encoder = new TextEncoder();
  let watch: ReadableStreamDefaultController<Uint8Array> | undefined;
  const watching = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  const echo = () =>
    watch!.enqueue(encoder.encode(JSON.stringify({ type: "MODIFIED", object: stored }) + "\n"));
  const s = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    if (url.searchParams.get("watch") === "true") {
      return new Response(
        new ReadableStream<Uint8Array>({
          start(c) {
            watch = c;
            watching.resolve();
          },
        }),
      );
    }
    await req.text();
    if (echoFirst) {
      echo();
      await released.promise;
    }
    return new Response(JSON.stringify(stored), {
      headers: { "Content-Type": "application/json" },
    });
  });
  return {
    url: `http://127.0.0.1:${s.addr.port}`,
    watching: watching.promise,
    echo,
    release: () => released.resolve(),
    close: () => s.shutdown(),
  };
}

/** One apply while a watch reads; the answer, the watched object and the echoes counted. */
async function applyWatched(
  client: KubeClient,
  s: ReturnType<typeof server>,
  echoFirst: boolean,
): Promise<{ answer: ConfigMap; watched: ConfigMap }> {
  const abort = new AbortController();
  const seen = Promise.withResolvers<ConfigMap>();
  const reading = (async () => {
    for await (
      const e of client.watch<ConfigMap>(ConfigMaps, { namespace: "default", signal: abort.signal })
    ) {
      // The watch has parsed (and the client kept) the object before the loop sees it.
      seen.resolve(e.object);
      if (echoFirst) s.release();
    }
  })();
  try {
    await s.watching;
    const answer = await client.apply<ConfigMap>(ConfigMaps, {
      metadata: { name: "c", namespace: "default" },
      data: { big: "x" },
    }, { fieldManager: "echo-test" });
    if (!echoFirst) s.echo();
    return { answer, watched: await seen.promise };
  } finally {
    abort.abort();
    await reading;
  }
}

for (const transport of ["http1", "fetch"] as const) {
  for (const echoFirst of [true, false]) {
    Deno.test(`echoed answers over ${transport}: ${echoFirst ? "an echo read first is the answer" : "an answer read first is parsed"}`, async () => {
      const s = server(echoFirst);
      const echoed: string[] = [];
      const client = new KubeClient({ server: s.url, namespace: "default" }, {
        transport,
        onEchoedAnswer: (resource) => echoed.push(resource),
      });
      try {
        const { answer, watched } = await applyWatched(client, s, echoFirst);
        assert.deepEqual(answer, watched);
        if (echoFirst) {
          assert.equal(answer, watched, "the answer is the object the watch parsed");
          assert.deepEqual(echoed, ["configmaps"]);
        } else {
          assert.notEqual(answer, watched, "the answer is parsed from its own text");
          assert.deepEqual(echoed, []);
        }
      } finally {
        client.close();
        await s.close();
      }
    });
  }
}

Deno.test("echoed answers: the manager's client counts them per resource on /metrics", async () => {
  const s = server(true);
  const kubeconfig = await tokenKubeconfig(s.url, "default");
  const manager = new Manager(parseOptions([`--kubeconfig=${kubeconfig.path}`]));
  try {
    const client = await manager.connect();
    await applyWatched(client, s, true);
    assert.match(
      manager.registry.render(),
      /^api_answers_echoed_total\{resource="configmaps"\} 1$/m,
    );
  } finally {
    manager.client.close();
    await s.close();
    await kubeconfig.remove();
  }
});
