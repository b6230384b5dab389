// Watches share a connection at most WATCHES_PER_CONNECTION at a time (an HTTP/2 connection allows
// only so many streams), and a released place is used again before a new connection is opened.
import assert from "node:assert/strict";
import { WatchConnections } from "../../runtime/client/transport/watch_connections.ts";

Deno.test("watch connections: a new connection per full one, places reused, all closed", () => {
  let opened = 0;
  let closed = 0;
  const pool = new WatchConnections(() => {
    opened++;
    return { close: () => closed++ } as unknown as Deno.HttpClient;
  }, 2);
  const a = pool.acquire();
  const b = pool.acquire();
  assert.equal(a.client, b.client);
  const c = pool.acquire();
  assert.notEqual(c.client, a.client);
  assert.equal(pool.size, 2);
  a.release();
  a.release(); // twice is once
  const d = pool.acquire();
  assert.equal(d.client, b.client, "the freed place");
  const e = pool.acquire();
  assert.equal(e.client, c.client);
  assert.equal(opened, 2);
  pool.close();
  assert.equal(closed, 2);
  assert.throws(() => pool.acquire(), /closed/);
});
