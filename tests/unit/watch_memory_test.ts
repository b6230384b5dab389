// A busy watch must not keep what it has read: chunks stream through `watchEvents` (with an abort
// signal, as every watcher passes one), each watched by a WeakRef, and at the last event, the
// watch still open, a garbage collection must have freed every chunk but the one just read.
// Counting the chunks themselves, rather than the bytes still allocated, needs neither big chunks
// nor a process of its own: the leak this guards against (a reaction per read on one long-lived
// promise, each holding its chunk) kept every chunk, which small ones show as well as 256 MiB did.
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { watchEvents } from "../../runtime/client/watch_lines.ts";
import { fetchAnswer } from "../../runtime/client/answer.ts";
import { ConfigMaps } from "../../runtime/client/resources.ts";

/**
 * V8's `gc()`, exposed in this process: the flag set now applies to contexts made after it, and
 * the function collects the whole heap, this context's objects included.
 */
function exposedGc(): () => void {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc");
}

const CHUNKS = 64;

Deno.test("watch: the chunks of a busy stream are not kept after they are read", async () => {
  const gc = exposedGc();
  const line = new TextEncoder().encode(
    JSON.stringify({
      type: "MODIFIED",
      object: { metadata: { name: "c", resourceVersion: "1" }, data: { x: "y".repeat(1 << 10) } },
    }) + "\n",
  );
  const chunks: WeakRef<Uint8Array>[] = [];
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent++ >= CHUNKS) return c.close();
      const chunk = line.slice();
      chunks.push(new WeakRef(chunk));
      c.enqueue(chunk);
    },
  });
  const ac = new AbortController();
  let events = 0;
  let kept = -1;
  for await (
    const _ of watchEvents(fetchAnswer(new Response(body)).chunks(ac.signal), ConfigMaps)
  ) {
    if (++events < CHUNKS) continue;
    // Measured while the watch is still open, as a watcher's runs for minutes. A WeakRef's target
    // stays alive until the current job ends: collected after a turn of the event loop.
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
    kept = chunks.filter((c) => c.deref() !== undefined).length;
  }
  assert.equal(events, CHUNKS);
  assert.equal(chunks.length, CHUNKS);
  // The chunk of the last event may still be held by the read that returned it.
  assert.ok(kept <= 1, `${kept} of ${CHUNKS} chunks read are still reachable`);
});
