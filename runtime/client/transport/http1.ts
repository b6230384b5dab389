/**
 * A minimal HTTP/1.1 client over `Deno.connect`/`Deno.connectTls`, for the API server only.
 *
 * Why: Deno's `fetch` costs the operator's process about 200 µs of CPU per request against 90 µs
 * for this (bench/transport_cost.ts, bench/README.md "What the transport costs"), and a busy
 * operator makes thousands of requests a minute. It is not a general client: no redirects,
 * no proxies (KubeClient keeps `fetch` where a proxy applies), no compression, no 100-continue, no
 * pipelining. It knows bodies by Content-Length, chunked transfer coding, or the connection's end.
 *
 * Connections are kept alive and reused one request at a time. A reused connection the server
 * closed while it was idle fails before any byte of an answer; such a request is sent again once on
 * a new connection when it may be (`retryOnStale`).
 */

export interface Http1Target {
  /** "https://host:port" or "http://host:port" (a path is ignored). */
  server: string;
  /** Deno.connectTls's certificate options (CA certificates, client certificate and key). */
  tls?: { caCerts?: string[]; cert?: string; key?: string };
  /**
   * The name the server's certificate must be valid for, and the one sent as SNI, when it is not
   * the server URL's host (a kubeconfig's `tls-server-name`).
   */
  serverName?: string;
}

/**
 * Deno.connectTls reads the TLS server name from this key of its options when present (Deno 2's
 * ext/net/02_tls.js), apart from the host it connects to. It is not in the typed options:
 * tests/unit/kubeconfig_connection_test.ts fails if a Deno upgrade stops honouring it.
 * Deno.startTls takes a name too, but no client certificate.
 */
const SERVER_NAME = Symbol.for("unstableServerName");

export interface Http1Request {
  method: string;
  /** Absolute path with its query string. */
  path: string;
  headers: readonly (readonly [string, string])[];
  body?: string;
  signal?: AbortSignal;
  /** Send again on a new connection if a reused one was found closed; default: GET, HEAD, PUT, DELETE. */
  retryOnStale?: boolean;
}

export interface Http1Head {
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Map<string, string>;
}

export interface Http1Response extends Http1Head {
  text: string;
}

export interface Http1Stream extends Http1Head {
  /** The body's bytes as they come; ends with the body, throws if the connection fails. */
  body: AsyncIterable<Uint8Array>;
  /** Ends the stream and its connection (an unfinished body is not read). */
  close(): void;
}

/** The connection closed before an answer's first byte: a reused connection the server closed. */
class StaleConnection extends Error {}

const CR = 13;
const LF = 10;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const IDEMPOTENT = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);
const READ_SIZE = 64 * 1024;

/** Bytes of one connection, read ahead into a buffer consumed from the front. */
class Connection {
  #buffer = new Uint8Array(READ_SIZE);
  #start = 0;
  #end = 0;
  #closed = false;
  /** Any byte of the current answer seen (a failure after it is not a stale connection). */
  answered = false;
  /** The read begun when the connection went idle, while it is idle. */
  #idleRead?: Promise<boolean>;
  /** That read, once the connection is taken again: the next answer's first read. */
  #pending?: Promise<boolean>;

  constructor(readonly conn: Deno.Conn) {}

  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.conn.close();
    } catch {
      // already closed by the peer
    }
  }

  async write(bytes: Uint8Array): Promise<void> {
    for (let written = 0; written < bytes.length;) {
      written += await this.conn.write(bytes.subarray(written));
    }
  }

  /**
   * The connection goes idle: a read is begun at once, so that a server closing it (the API
   * server does after 90 s idle) is known then, not when a request is sent on it. `onEnd` is
   * called if that read ends while the connection is still idle.
   */
  idle(onEnd: () => void): void {
    const read = this.#read();
    this.#idleRead = read;
    const ended = () => {
      if (this.#idleRead === read) onEnd();
    };
    read.then(ended, ended);
  }

  /** Taken from the idle pool for a request: its idle read becomes the answer's first. */
  take(): void {
    this.#pending = this.#idleRead;
    this.#idleRead = undefined;
  }

  /** Reads more into the buffer; false at the end of the stream. */
  #fill(): Promise<boolean> {
    const pending = this.#pending;
    this.#pending = undefined;
    return pending ?? this.#read();
  }

  async #read(): Promise<boolean> {
    if (this.#start === this.#end) this.#start = this.#end = 0;
    if (this.#buffer.length - this.#end < READ_SIZE / 4) {
      const live = this.#end - this.#start;
      const next = live * 2 + READ_SIZE > this.#buffer.length
        ? new Uint8Array(live * 2 + READ_SIZE)
        : this.#buffer;
      next.set(this.#buffer.subarray(this.#start, this.#end), 0);
      this.#buffer = next;
      this.#start = 0;
      this.#end = live;
    }
    const n = await this.conn.read(this.#buffer.subarray(this.#end));
    if (n === null) return false;
    this.#end += n;
    this.answered = true;
    return true;
  }

  /** The bytes before the next CRLF (which is consumed); undefined at the end of the stream. */
  async line(): Promise<string | undefined> {
    let from = this.#start;
    while (true) {
      const lf = this.#buffer.subarray(0, this.#end).indexOf(LF, from);
      if (lf >= 0) {
        const stop = lf > this.#start && this.#buffer[lf - 1] === CR ? lf - 1 : lf;
        const text = decoder.decode(this.#buffer.subarray(this.#start, stop));
        this.#start = lf + 1;
        return text;
      }
      from = this.#end;
      const before = this.#start;
      if (!await this.#fill()) return undefined;
      from -= before - this.#start; // the live bytes may have moved to the front
    }
  }

  /** Up to `max` bytes (at least one); undefined at the end of the stream. A copy. */
  async some(max: number): Promise<Uint8Array | undefined> {
    if (this.#start === this.#end && !await this.#fill()) return undefined;
    const n = Math.min(max, this.#end - this.#start);
    const out = this.#buffer.slice(this.#start, this.#start + n);
    this.#start += n;
    return out;
  }
}

/** How an answer's body ends. */
type Framing = { kind: "length"; left: number } | { kind: "chunked" } | { kind: "close" };

async function readHead(
  c: Connection,
  method: string,
): Promise<{ head: Http1Head; framing: Framing }> {
  let statusLine = await c.line();
  if (statusLine === undefined) {
    if (!c.answered) throw new StaleConnection("connection closed before an answer");
    throw new Error("connection closed before an answer's status line");
  }
  // 1xx answers (100 Continue, 103 Early Hints) come before the real one.
  while (true) {
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (!m) throw new Error(`not an HTTP/1.1 status line: ${statusLine.slice(0, 100)}`);
    const status = Number(m[1]);
    const headers = new Map<string, string>();
    while (true) {
      const line = await c.line();
      if (line === undefined) throw new Error("connection closed in an answer's headers");
      if (line === "") break;
      const colon = line.indexOf(":");
      if (colon <= 0) throw new Error(`malformed header line: ${line.slice(0, 100)}`);
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const had = headers.get(name);
      headers.set(name, had === undefined ? value : `${had}, ${value}`);
    }
    if (status >= 100 && status < 200) {
      statusLine = await c.line();
      if (statusLine === undefined) throw new Error("connection closed after a 1xx answer");
      continue;
    }
    let framing: Framing;
    if (method === "HEAD" || status === 204 || status === 304) {
      framing = { kind: "length", left: 0 };
    } else if (/\bchunked\b/i.test(headers.get("transfer-encoding") ?? "")) {
      framing = { kind: "chunked" };
    } else if (headers.has("content-length")) {
      const left = Number(headers.get("content-length"));
      if (!Number.isSafeInteger(left) || left < 0) throw new Error("invalid Content-Length");
      framing = { kind: "length", left };
    } else framing = { kind: "close" };
    return { head: { status, headers }, framing };
  }
}

/** The body's bytes as they come, per its framing. */
async function* bodyOf(c: Connection, framing: Framing): AsyncGenerator<Uint8Array> {
  if (framing.kind === "length") {
    for (let left = framing.left; left > 0;) {
      const bytes = await c.some(left);
      if (bytes === undefined) throw new Error("connection closed in a body");
      left -= bytes.length;
      yield bytes;
    }
    return;
  }
  if (framing.kind === "close") {
    while (true) {
      const bytes = await c.some(READ_SIZE);
      if (bytes === undefined) return;
      yield bytes;
    }
  }
  while (true) {
    const sizeLine = await c.line();
    if (sizeLine === undefined) throw new Error("connection closed in a chunked body");
    const size = parseInt(sizeLine, 16); // chunk extensions after ";" are ignored by parseInt
    if (!Number.isSafeInteger(size) || size < 0) throw new Error(`invalid chunk size ${sizeLine}`);
    if (size === 0) {
      // Trailers, then the empty line.
      while (true) {
        const line = await c.line();
        if (line === undefined || line === "") return;
      }
    }
    for (let left = size; left > 0;) {
      const bytes = await c.some(left);
      if (bytes === undefined) throw new Error("connection closed in a chunk");
      left -= bytes.length;
      yield bytes;
    }
    if (await c.line() !== "") throw new Error("a chunk not followed by CRLF");
  }
}

/** May the connection serve another request after this answer? */
function reusable(head: Http1Head, framing: Framing): boolean {
  return framing.kind !== "close" && !/\bclose\b/i.test(head.headers.get("connection") ?? "");
}

export class Http1Client {
  readonly #url: URL;
  readonly #hostname: string;
  readonly #port: number;
  readonly #tls?: Http1Target["tls"] & { [SERVER_NAME]?: string };
  readonly #idle: Connection[] = [];
  readonly #open = new Set<Connection>();
  #closed = false;

  constructor(target: Http1Target) {
    this.#url = new URL(target.server);
    if (this.#url.protocol !== "https:" && this.#url.protocol !== "http:") {
      throw new Error(`unsupported scheme ${this.#url.protocol}`);
    }
    this.#hostname = this.#url.hostname.replace(/^\[|\]$/g, "");
    this.#port = Number(this.#url.port || (this.#url.protocol === "https:" ? 443 : 80));
    this.#tls = target.serverName === undefined
      ? target.tls
      : { ...target.tls, [SERVER_NAME]: target.serverName };
  }

  /** Connections open now, idle or busy (tests, metrics). */
  get connections(): number {
    return this.#open.size;
  }

  async #connect(): Promise<Connection> {
    const conn = this.#url.protocol === "https:"
      ? await Deno.connectTls({ hostname: this.#hostname, port: this.#port, ...this.#tls })
      : await Deno.connect({ hostname: this.#hostname, port: this.#port });
    const c = new Connection(conn);
    this.#open.add(c);
    return c;
  }

  #release(c: Connection, keep: boolean): void {
    if (keep && !this.#closed && !c.closed) {
      this.#idle.push(c);
      c.idle(() => {
        // Closed by the server (or sent what nobody asked for) while idle: not to be used.
        const at = this.#idle.indexOf(c);
        if (at >= 0) this.#idle.splice(at, 1);
        this.#release(c, false);
      });
      return;
    }
    c.close();
    this.#open.delete(c);
  }

  /** The bytes of `req` on the wire: its head and body in one buffer. */
  #encode(req: Http1Request): Uint8Array {
    const body = req.body === undefined ? undefined : encoder.encode(req.body);
    let text = `${req.method} ${req.path} HTTP/1.1\r\nHost: ${this.#url.host}\r\n`;
    for (const [name, value] of req.headers) {
      if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) throw new Error(`header ${name}: CR or LF`);
      text += `${name}: ${value}\r\n`;
    }
    if (body !== undefined) text += `Content-Length: ${body.length}\r\n`;
    text += "\r\n";
    const head = encoder.encode(text);
    if (body === undefined) return head;
    // One write: a request in two segments waits for the server's delayed ACK (Nagle).
    const bytes = new Uint8Array(head.length + body.length);
    bytes.set(head);
    bytes.set(body, head.length);
    return bytes;
  }

  /** Sends `bytes` on `c` and reads the answer's head. */
  async #send(
    c: Connection,
    bytes: Uint8Array,
    method: string,
  ): Promise<{ head: Http1Head; framing: Framing }> {
    c.answered = false;
    try {
      await c.write(bytes);
    } catch (e) {
      throw new StaleConnection(`writing a request: ${(e as Error).message}`);
    }
    try {
      return await readHead(c, method);
    } catch (e) {
      // A reset before any byte of an answer is a closed idle connection too.
      if (!c.answered && !(e instanceof StaleConnection)) {
        throw new StaleConnection(`reading an answer: ${(e as Error).message}`);
      }
      throw e;
    }
  }

  /** A connection with `req` sent and its answer's head read: reused, or new (once more when stale). */
  async #exchange(
    req: Http1Request,
    bytes = this.#encode(req),
  ): Promise<{ c: Connection; head: Http1Head; framing: Framing }> {
    if (this.#closed) throw new Error("Http1Client is closed");
    const retry = req.retryOnStale ?? IDEMPOTENT.has(req.method);
    const reused = this.#idle.pop();
    reused?.take();
    const c = reused ?? await this.#connect();
    const onAbort = () => c.close();
    req.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      req.signal?.throwIfAborted();
      const { head, framing } = await this.#send(c, bytes, req.method);
      return { c, head, framing };
    } catch (e) {
      this.#release(c, false);
      if (req.signal?.aborted) throw req.signal.reason;
      if (e instanceof StaleConnection && reused && retry) return await this.#exchange(req, bytes);
      throw e;
    } finally {
      req.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** One request; its whole answer as text. The connection is kept for the next when it may be. */
  async request(req: Http1Request): Promise<Http1Response> {
    const { c, head, framing } = await this.#exchange(req);
    const onAbort = () => c.close();
    req.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const parts: Uint8Array[] = [];
      let length = 0;
      for await (const bytes of bodyOf(c, framing)) {
        parts.push(bytes);
        length += bytes.length;
      }
      let whole = parts[0] ?? new Uint8Array(0);
      if (parts.length > 1) {
        whole = new Uint8Array(length);
        let at = 0;
        for (const p of parts) {
          whole.set(p, at);
          at += p.length;
        }
      }
      this.#release(c, reusable(head, framing));
      return { ...head, text: decoder.decode(whole) };
    } catch (e) {
      this.#release(c, false);
      if (req.signal?.aborted) throw req.signal.reason;
      throw e;
    } finally {
      req.signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * One request whose answer is read as it comes (a watch): the connection is its own until the
   * body ends or `close()`, and is not kept afterwards (a watch's end is seldom a clean one).
   */
  async stream(req: Http1Request): Promise<Http1Stream> {
    const { c, head, framing } = await this.#exchange(req);
    const close = () => this.#release(c, false);
    req.signal?.addEventListener("abort", close, { once: true });
    const clientClosed = () => this.#closed;
    return {
      ...head,
      close,
      body: (async function* () {
        try {
          yield* bodyOf(c, framing);
        } catch (e) {
          if (c.closed || req.signal?.aborted || clientClosed()) return;
          throw e;
        } finally {
          req.signal?.removeEventListener("abort", close);
          close();
        }
      })(),
    };
  }

  /** Closes every connection, idle or busy; requests in flight fail. */
  close(): void {
    this.#closed = true;
    for (const c of this.#open) c.close();
    this.#open.clear();
    this.#idle.length = 0;
  }
}
