// A watch whose connection went away without a word: the API server ends every watch at its
// timeoutSeconds, so one still open well past it is closed by the client and ends as if the server
// had closed it (the watcher resumes from its resourceVersion), with a warning. Over both
// transports, against a server that sends one event and then neither closes nor sends again.
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import type { RuntimeLog } from "../../runtime/core/log.ts";

const event = JSON.stringify({
  type: "ADDED",
  object: { metadata: { name: "a", namespace: "default", resourceVersion: "5" } },
}) + "\n";

/** A watch server that sends one event, then stays silent, or closes when `closes`. */
function server(closes: boolean) {
  const s = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new TextEncoder().encode(event));
          if (closes) c.close();
        },
      }),
    ));
  return { url: `http://127.0.0.1:${s.addr.port}`, close: () => s.shutdown() };
}

function recordingLog(warnings: string[]): RuntimeLog {
  const none = () => {};
  return { debug: none, info: none, error: none, warn: (msg) => warnings.push(msg) };
}

for (const transport of ["http1", "fetch"] as const) {
  Deno.test(`watch over ${transport}: still open past its timeoutSeconds, closed and ended`, async () => {
    const s = server(false);
    const warnings: string[] = [];
    const client = new KubeClient({ server: s.url, namespace: "default" }, {
      transport,
      watchOverdueMs: 200,
      log: recordingLog(warnings),
    });
    try {
      const started = performance.now();
      const names: string[] = [];
      for await (
        const e of client.watch<{ metadata: { name: string } }>(ConfigMaps, {
          namespace: "default",
          timeoutSeconds: 1,
        })
      ) names.push(e.object.metadata.name);
      const ms = performance.now() - started;
      assert.deepEqual(names, ["a"]);
      assert.ok(ms >= 1_150 && ms < 5_000, `ended after ${ms.toFixed(0)} ms`);
      assert.deepEqual(warnings, [
        "watch still open past its timeoutSeconds: closed, to be resumed",
      ]);
    } finally {
      client.close();
      await s.close();
    }
  });

  Deno.test(`watch over ${transport}: ended by the server, nothing closed later`, async () => {
    const s = server(true);
    const warnings: string[] = [];
    const client = new KubeClient({ server: s.url, namespace: "default" }, {
      transport,
      watchOverdueMs: 100,
      log: recordingLog(warnings),
    });
    try {
      let n = 0;
      for await (
        const _ of client.watch(ConfigMaps, { namespace: "default", timeoutSeconds: 1 })
      ) n++;
      assert.equal(n, 1);
      await new Promise((r) => setTimeout(r, 1_300));
      assert.deepEqual(warnings, [], "the overdue timer went with the watch");
    } finally {
      client.close();
      await s.close();
    }
  });
}

Deno.test("watch with a timeoutSeconds: the caller's abort still ends it at once", async () => {
  const s = server(false);
  const client = new KubeClient({ server: s.url, namespace: "default" });
  const abort = new AbortController();
  try {
    const started = performance.now();
    for await (
      const _ of client.watch(ConfigMaps, {
        namespace: "default",
        timeoutSeconds: 600,
        signal: abort.signal,
      })
    ) abort.abort();
    assert.ok(performance.now() - started < 2_000);
  } finally {
    client.close();
    await s.close();
  }
});
