// A busy watch must not keep what it has read: 256 MiB of events stream through `watchEvents`
// (with an abort signal, as every watcher passes one) in a child process with an exposed GC, and
// the ArrayBuffers alive at the last event, the watch still open, must be a small fraction.
import assert from "node:assert/strict";

const WATCH_LINES = new URL("../../runtime/watch_lines.ts", import.meta.url).href;
const RESOURCES = new URL("../../runtime/resources.ts", import.meta.url).href;

const script = `
import { watchEvents } from "${WATCH_LINES}";
import { ConfigMaps } from "${RESOURCES}";
const line = new TextEncoder().encode(JSON.stringify({
  type: "MODIFIED",
  object: { metadata: { name: "c", resourceVersion: "1" }, data: { x: "y".repeat(1 << 20) } },
}) + "\\n");
let sent = 0;
const body = new ReadableStream({
  pull(c) { if (sent++ < 256) c.enqueue(line.slice()); else c.close(); },
});
const ac = new AbortController();
let events = 0;
let externalBytes = 0;
for await (const _ of watchEvents(body, ConfigMaps, ac.signal)) {
  // Measured while the watch is still open, as a watcher's runs for minutes.
  // V8 frees the backing stores of collected ArrayBuffers off the main thread: measured right
  // after one gc() the count still held 10 to 40 MiB of freed chunks, after a turn of the event
  // loop and a second gc() 2.6 MiB.
  if (++events === 256) {
    globalThis.gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
    globalThis.gc();
    externalBytes = Deno.memoryUsage().external;
  }
}
console.log(JSON.stringify({ events, externalBytes }));
`;

Deno.test("watch: the chunks of a busy stream are not kept after they are read", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  assert.ok(out.success, text(out.stderr));
  const { events, externalBytes } = JSON.parse(text(out.stdout));
  assert.equal(events, 256);
  // 256 MiB went through; a stream that kept its chunks would hold all of them.
  assert.ok(externalBytes < 32 * 2 ** 20, `${(externalBytes / 2 ** 20).toFixed(0)} MiB kept`);
});
