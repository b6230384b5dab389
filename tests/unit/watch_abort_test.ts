// A watch ends when its signal aborts, even while a read of its stream never settles (after 1,000
// MiniClusters, quiet watches took 20 s to notice the abort of their fetch, and kept the process
// alive that long after SIGTERM).
import assert from "node:assert/strict";
import { KubeClient } from "../../runtime/client/client.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";
import { abortableReads } from "../../runtime/client/watch_lines.ts";

Deno.test("abortableReads: a read ends on abort (at once when aborted already), never before", async () => {
  const ac = new AbortController();
  const reads = abortableReads(ac.signal);
  assert.equal(await reads.read(Promise.resolve(1)), 1);
  let settled = false;
  const pending = reads.read(new Promise<number>(() => {}));
  pending.catch(() => settled = true);
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(settled, false);
  ac.abort(new Error("stop"));
  await assert.rejects(pending, /stop/);
  await assert.rejects(reads.read(new Promise(() => {})), /stop/);
  reads.dispose();
});

Deno.test("watch: an abort ends it while the server sends nothing", async () => {
  // A watch stream that stays open and silent, as a quiet collection's does.
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    () =>
      new Response(new ReadableStream({ start() {} }), {
        headers: { "Content-Type": "application/json" },
      }),
  );
  const client = new KubeClient({ server: `http://127.0.0.1:${server.addr.port}`, namespace: "d" });
  try {
    const ac = new AbortController();
    const events = client.watch(ConfigMaps, { namespace: "d", signal: ac.signal });
    const ended = (async () => {
      for await (const _ of events) { /* none */ }
    })();
    await new Promise((r) => setTimeout(r, 100));
    const t = performance.now();
    ac.abort();
    await ended;
    assert.ok(performance.now() - t < 1_000);
  } finally {
    client.close();
    await server.shutdown();
  }
});
