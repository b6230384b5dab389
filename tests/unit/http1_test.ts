import assert from "node:assert/strict";
import { Http1Client } from "../../runtime/client/transport/http1.ts";

const JSON_HEADERS = [["Accept", "application/json"]] as const;

/** A Deno.serve server on a free port; `close` stops it. */
function serve(handler: (req: Request) => Response | Promise<Response>) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, handler);
  return { server: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

/**
 * A raw TCP server that answers each connection's first request with `answer`. Then, with
 * `closeIdleAfterMs`, it closes the connection that long after (a server timing out an idle
 * connection); without, it closes it when the next request arrives, unanswered (the same, too late
 * for the client to know before it sent).
 */
function oneAnswerPerConnection(answer: string, closeIdleAfterMs?: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let connections = 0;
  const read = async (conn: Deno.Conn) => {
    const buf = new Uint8Array(4096);
    let seen = "";
    while (!seen.includes("\r\n\r\n")) {
      const n = await conn.read(buf);
      if (n === null) return false;
      seen += new TextDecoder().decode(buf.subarray(0, n));
    }
    return true;
  };
  (async () => {
    for await (const conn of listener) {
      connections++;
      (async () => {
        if (!await read(conn)) return conn.close();
        await conn.write(new TextEncoder().encode(answer));
        if (closeIdleAfterMs !== undefined) setTimeout(() => conn.close(), closeIdleAfterMs);
        else await read(conn).catch(() => {}).finally(() => conn.close());
      })().catch(() => {});
    }
  })().catch(() => {});
  return {
    server: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    connections: () => connections,
    close: () => listener.close(),
  };
}

Deno.test("http1: answers by Content-Length, the connection kept for the next request", async () => {
  const s = serve((req) => Response.json({ path: new URL(req.url).pathname }));
  const client = new Http1Client({ server: s.server });
  try {
    for (const path of ["/a", "/b", "/c"]) {
      const r = await client.request({ method: "GET", path, headers: JSON_HEADERS });
      assert.deepEqual(r.status, 200);
      assert.deepEqual(JSON.parse(r.text), { path });
      assert.deepEqual(r.headers.get("content-type"), "application/json");
    }
    assert.deepEqual(client.connections, 1);
  } finally {
    client.close();
    await s.close();
  }
});

Deno.test("http1: a body is sent with its length and read back whole, UTF-8 across reads", async () => {
  const s = serve(async (req) => new Response(`${req.method} ${await req.text()}`));
  const client = new Http1Client({ server: s.server });
  try {
    const body = "ü".repeat(100_000); // more than one read, a character cut between two
    const r = await client.request({ method: "PATCH", path: "/x", headers: [], body });
    assert.deepEqual(r.text, `PATCH ${body}`);
    const empty = await client.request({ method: "POST", path: "/x", headers: [], body: "" });
    assert.deepEqual(empty.text, "POST ");
  } finally {
    client.close();
    await s.close();
  }
});

Deno.test("http1: a chunked answer streams as it comes and ends with its last chunk", async () => {
  const lines = ["one", "two", "three"];
  const s = serve(() =>
    new Response(
      new ReadableStream({
        async start(controller) {
          for (const line of lines) {
            controller.enqueue(new TextEncoder().encode(`${line}\n`));
            await new Promise((r) => setTimeout(r, 5));
          }
          controller.close();
        },
      }),
    )
  );
  const client = new Http1Client({ server: s.server });
  try {
    const stream = await client.stream({ method: "GET", path: "/watch", headers: JSON_HEADERS });
    assert.deepEqual(stream.status, 200);
    assert.deepEqual(stream.headers.get("transfer-encoding"), "chunked");
    let text = "";
    for await (const bytes of stream.body) text += new TextDecoder().decode(bytes);
    assert.deepEqual(text, "one\ntwo\nthree\n");
    // A stream's connection is not kept: a watch's end is seldom clean.
    assert.deepEqual(client.connections, 0);
    // A chunked answer read whole keeps its connection.
    const whole = await client.request({ method: "GET", path: "/watch", headers: [] });
    assert.deepEqual(whole.text, "one\ntwo\nthree\n");
    assert.deepEqual(client.connections, 1);
  } finally {
    client.close();
    await s.close();
  }
});

Deno.test("http1: answers without a body: 204 and HEAD", async () => {
  const s = serve((req) =>
    req.method === "HEAD"
      ? new Response("ignored", { headers: { "Content-Length": "7" } })
      : new Response(null, { status: 204 })
  );
  const client = new Http1Client({ server: s.server });
  try {
    const none = await client.request({ method: "DELETE", path: "/x", headers: [] });
    assert.deepEqual([none.status, none.text], [204, ""]);
    const head = await client.request({ method: "HEAD", path: "/x", headers: [] });
    assert.deepEqual([head.status, head.text], [200, ""]);
    // Both left the connection in step: one more request on it is answered.
    const again = await client.request({ method: "DELETE", path: "/x", headers: [] });
    assert.deepEqual(again.status, 204);
    assert.deepEqual(client.connections, 1);
  } finally {
    client.close();
    await s.close();
  }
});

const OK = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}";

Deno.test("http1: a connection the server closes while idle is dropped then, not used", async () => {
  const s = oneAnswerPerConnection(OK, 20);
  const client = new Http1Client({ server: s.server });
  try {
    assert.equal((await client.request({ method: "GET", path: "/", headers: [] })).text, "{}");
    await new Promise((r) => setTimeout(r, 100)); // the server closes the idle connection
    assert.equal(client.connections, 0);
    // Even a request that may not be sent twice goes out at once, on a new connection.
    const post = await client.request({ method: "POST", path: "/", headers: [], body: "{}" });
    assert.equal(post.text, "{}");
    assert.equal(s.connections(), 2);
  } finally {
    client.close();
    s.close();
  }
});

Deno.test("http1: a reused connection closed as a request is sent: sent again if it may be, else an error", async () => {
  const s = oneAnswerPerConnection(OK);
  const client = new Http1Client({ server: s.server });
  const get = () => client.request({ method: "GET", path: "/", headers: [] });
  const post = (retryOnStale?: boolean) =>
    client.request({ method: "POST", path: "/", headers: [], body: "{}", retryOnStale });
  try {
    assert.equal((await get()).text, "{}");
    // Sent on the kept connection, which the server closes unanswered: sent again on a new one.
    assert.equal((await get()).text, "{}");
    assert.equal(s.connections(), 2);
    await assert.rejects(() => post(), /before an answer/);
    assert.equal(s.connections(), 2);
    assert.equal((await get()).text, "{}"); // a new connection for the next
    // The same POST when the caller says it may be sent again.
    assert.equal((await post(true)).text, "{}");
    assert.equal(s.connections(), 4);
  } finally {
    client.close();
    s.close();
  }
});

Deno.test("http1: aborting a stream ends its body quietly and closes its connection", async () => {
  const s = serve(() => new Response(new ReadableStream({ start() {} })));
  const client = new Http1Client({ server: s.server });
  const abort = new AbortController();
  try {
    const stream = await client.stream({
      method: "GET",
      path: "/",
      headers: [],
      signal: abort.signal,
    });
    setTimeout(() => abort.abort(), 20);
    const chunks: Uint8Array[] = [];
    for await (const bytes of stream.body) chunks.push(bytes);
    assert.deepEqual(chunks.length, 0);
    assert.deepEqual(client.connections, 0);
  } finally {
    client.close();
    await s.close();
  }
});

Deno.test("http1: aborting a request rejects it with the signal's reason", async () => {
  // A server that takes connections and never answers.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) accepted.push(conn);
  })().catch(() => {});
  const client = new Http1Client({
    server: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
  });
  const abort = new AbortController();
  try {
    const pending = client.request({ method: "GET", path: "/", headers: [], signal: abort.signal });
    setTimeout(() => abort.abort(new DOMException("stop", "TimeoutError")), 20);
    await assert.rejects(pending, (e) => e instanceof DOMException && e.name === "TimeoutError");
    assert.deepEqual(client.connections, 0);
  } finally {
    client.close();
    listener.close();
    for (const c of accepted) c.close();
  }
});

Deno.test("http1: a header with CR or LF is refused before anything is sent", async () => {
  let requests = 0;
  const s = serve(() => {
    requests++;
    return new Response("");
  });
  const client = new Http1Client({ server: s.server });
  try {
    await assert.rejects(
      () => client.request({ method: "GET", path: "/", headers: [["X-Evil", "a\r\nInjected: 1"]] }),
      /CR or LF/,
    );
    assert.deepEqual([requests, client.connections], [0, 0]);
  } finally {
    client.close();
    await s.close();
  }
});

Deno.test("http1: a long chunked answer of many chunks arrives whole, in order", async () => {
  const line = (i: number) => `${String(i).padStart(6, "0")} ${"é".repeat(500)}\n`;
  const count = 2_000;
  const s = serve(() =>
    new Response(
      new ReadableStream({
        async pull(controller) {
          for (let i = 0; i < count; i++) {
            controller.enqueue(new TextEncoder().encode(line(i)));
            if (i % 100 === 0) await new Promise((r) => setTimeout(r, 1));
          }
          controller.close();
        },
      }),
    )
  );
  const client = new Http1Client({ server: s.server });
  try {
    const expected = Array.from({ length: count }, (_, i) => line(i)).join("");
    const whole = await client.request({ method: "GET", path: "/", headers: [] });
    assert.equal(whole.text, expected);
    const stream = await client.stream({ method: "GET", path: "/", headers: [] });
    const decoder = new TextDecoder();
    let text = "";
    for await (const bytes of stream.body) text += decoder.decode(bytes, { stream: true });
    assert.equal(text + decoder.decode(), expected);
  } finally {
    client.close();
    await s.close();
  }
});
