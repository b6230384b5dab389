/**
 * A fault-injecting proxy between an operator and a real kube-apiserver, on loopback.
 *
 *   operator ──plain HTTP──▶ TCP front ──▶ HTTP handler ──HTTPS (admin cert)──▶ kube-apiserver
 *
 * The operator gets a kubeconfig `server: http://127.0.0.1:<port>` without credentials; the proxy
 * authenticates upstream with the cluster's admin certificate. Two layers, because the faults live
 * at two levels:
 *
 * - the TCP front owns the operator's connections, so it can reset them all at once (a network
 *   blip, an apiserver restart) or refuse new ones (the apiserver is down), and it can cut the one
 *   connection a request came on;
 * - the HTTP handler sees requests and watch streams: it answers with synthesized errors (410, 429,
 *   500, 503), delays, serves an older list, delays, drops or rewrites watch events, counts writes,
 *   and can freeze (forward nothing more) the moment a chosen write has gone through — the hook
 *   the crash tests use to SIGKILL the operator right after its i-th write.
 *
 * Faults are plain functions the test sets and clears (`rules`, `watchFilter`); the proxy itself
 * decides nothing.
 */
import { loadKubeconfig } from "../../runtime/config/kubeconfig.ts";
import { LineBuffer } from "../../runtime/client/client.ts";
import type {
  FaultProxyOptions,
  ProxiedRequest,
  ProxiedWatchEvent,
  Rule,
  WatchFilter,
  WatchVerdict,
} from "./proxy_faults.ts";
import {
  closeQuietly,
  listKey,
  parsePath,
  statusBody,
  statusResponse,
  streamKey,
} from "./proxy_wire.ts";

export type {
  Fault,
  FaultProxyOptions,
  ProxiedRequest,
  ProxiedWatchEvent,
  Rule,
  WatchFilter,
  WatchVerdict,
} from "./proxy_faults.ts";
export { parsePath } from "./proxy_wire.ts";

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

interface Pair {
  client: Deno.Conn;
  inner: Deno.Conn;
  closed: boolean;
}

export class FaultProxy {
  /** Every request, in arrival order. */
  readonly requests: ProxiedRequest[] = [];
  /** Consulted in order for every request; the first fault returned applies. */
  rules: Rule[] = [];
  /** Applied to every event of every watch stream. */
  watchFilter?: WatchFilter;
  /** Called once per successful (2xx) write, after the apiserver answered, before the operator. */
  onWrite?: (req: ProxiedRequest, count: number) => void;
  /** Successful writes so far. */
  writes = 0;
  /** When connections were refused (performance.now()): each is a request that found no server. */
  readonly refused: number[] = [];

  readonly #listener: Deno.TcpListener;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #upstream: string;
  readonly #http: Deno.HttpClient;
  readonly #pairs = new Map<number, Pair>();
  /** Open watch streams → a function that ends one (closing the stream to the operator). */
  /** Open watch streams: how to end each, and which stream (`streamKey`) it serves. */
  readonly #watches = new Map<() => void, string>();
  /** Every watch stream ever asked for (`streamKey`). */
  readonly #streams = new Set<string>();
  readonly #firstLists = new Map<string, { status: number; body: string }>();
  readonly #accepting: Promise<void>;
  readonly #tasks = new Set<Promise<unknown>>();
  #refusing = false;
  #frozen = false;
  #nextId = 1;
  #dir?: string;
  #ownsDir = false;
  #closed = false;

  private constructor(upstream: string, http: Deno.HttpClient) {
    this.#upstream = upstream;
    this.#http = http;
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req, info) => this.#handle(req, info.remoteAddr),
    );
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#accepting = this.#accept();
  }

  static async start(opts: FaultProxyOptions): Promise<FaultProxy> {
    const conn = await loadKubeconfig(opts.kubeconfig);
    const http = Deno.createHttpClient({
      caCerts: conn.caCerts,
      ...(conn.clientCert && conn.clientKey ? { cert: conn.clientCert, key: conn.clientKey } : {}),
    } as Deno.CreateHttpClientOptions);
    const proxy = new FaultProxy(conn.server.replace(/\/+$/, ""), http);
    if (opts.dir) {
      proxy.#dir = opts.dir;
    } else {
      proxy.#dir = await Deno.makeTempDir({ prefix: "minicluster-faults-" });
      proxy.#ownsDir = true;
    }
    return proxy;
  }

  get port(): number {
    return this.#listener.addr.port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Writes a kubeconfig pointing at the proxy (no credentials: the proxy adds them). */
  async writeKubeconfig(name = "kubeconfig"): Promise<string> {
    const path = `${this.#dir}/${name}`;
    await Deno.writeTextFile(
      path,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: faults",
        "  cluster:",
        `    server: ${this.url}`,
        "users:",
        "- name: faults",
        "  user: {}",
        "contexts:",
        "- name: faults",
        "  context: {cluster: faults, user: faults, namespace: default}",
        "current-context: faults",
        "",
      ].join("\n"),
    );
    return path;
  }

  // ---------------------------------------------------------------------------------------------
  // Connection-level faults.

  /** Cuts every open connection (in-flight requests and watches get no more bytes). */
  resetConnections(): void {
    for (const pair of [...this.#pairs.values()]) this.#cut(pair);
  }

  /** While refusing, new connections are closed at once, like a port nobody listens on. */
  set refusing(on: boolean) {
    this.#refusing = on;
    if (on) this.resetConnections();
  }

  get refusing(): boolean {
    return this.#refusing;
  }

  /**
   * Frozen: nothing more reaches the apiserver; every request is cut. The crash tests freeze at the
   * i-th write so that the apiserver holds exactly the state after that write.
   */
  freeze(): void {
    this.#frozen = true;
  }

  thaw(): void {
    this.#frozen = false;
  }

  /** Ends every open watch stream normally (the operator resumes from its last resourceVersion). */
  closeWatches(): void {
    for (const end of [...this.#watches.keys()]) end();
  }

  /**
   * The watch streams asked for so far that have no watch open now: while one of them is
   * reconnecting (behind its backoff after an outage) the client's view of it may be stale.
   */
  unwatched(): string[] {
    const open = new Set(this.#watches.values());
    return [...this.#streams].filter((k) => !open.has(k));
  }

  /** Forgets the recorded lists: the next answer to each list becomes its "older list". */
  forgetLists(): void {
    this.#firstLists.clear();
  }

  /** Requests that arrived in [from, to) (performance.now() times). */
  requestsBetween(from: number, to: number): ProxiedRequest[] {
    return this.requests.filter((r) => r.at >= from && r.at < to);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.closeWatches();
    this.resetConnections();
    this.#listener.close();
    await this.#accepting;
    await this.#server.shutdown();
    await Promise.allSettled([...this.#tasks]);
    this.#http.close();
    if (this.#ownsDir && this.#dir) await Deno.remove(this.#dir, { recursive: true });
  }

  // ---------------------------------------------------------------------------------------------
  // TCP front.

  async #accept(): Promise<void> {
    const innerPort = this.#server.addr.port;
    for (;;) {
      let client: Deno.Conn;
      try {
        client = await this.#listener.accept();
      } catch {
        return; // listener closed
      }
      if (this.#refusing || this.#closed) {
        this.refused.push(performance.now());
        closeQuietly(client);
        continue;
      }
      let inner: Deno.Conn;
      try {
        inner = await Deno.connect({ hostname: "127.0.0.1", port: innerPort });
      } catch {
        closeQuietly(client);
        continue;
      }
      const pair: Pair = { client, inner, closed: false };
      const key = (inner.localAddr as Deno.NetAddr).port;
      this.#pairs.set(key, pair);
      const done = Promise.allSettled([
        client.readable.pipeTo(inner.writable),
        inner.readable.pipeTo(client.writable),
      ]).then(() => {
        this.#pairs.delete(key);
        this.#cut(pair);
      });
      this.#track(done);
    }
  }

  #cut(pair: Pair): void {
    if (pair.closed) return;
    pair.closed = true;
    closeQuietly(pair.client);
    closeQuietly(pair.inner);
  }

  #track(p: Promise<unknown>): void {
    this.#tasks.add(p);
    p.finally(() => this.#tasks.delete(p));
  }

  // ---------------------------------------------------------------------------------------------
  // HTTP handler.

  async #handle(req: Request, remote: Deno.NetAddr): Promise<Response> {
    const url = new URL(req.url);
    const write = WRITE_METHODS.has(req.method);
    const parsed = parsePath(url.pathname);
    const watch = url.searchParams.get("watch") === "true" || url.searchParams.get("watch") === "1";
    const info: ProxiedRequest = {
      id: this.#nextId++,
      at: performance.now(),
      method: req.method,
      path: url.pathname,
      query: url.searchParams,
      watch,
      write,
      list: req.method === "GET" && !watch && parsed.name === undefined && parsed.resource !== "",
      ...parsed,
      body: write ? await req.text() : undefined,
    };
    this.requests.push(info);
    if (watch) this.#streams.add(streamKey(url));
    const cut = () => {
      info.code = 0;
      const pair = this.#pairs.get(remote.port);
      if (pair) this.#cut(pair);
      return new Response(null, { status: 502 });
    };
    if (this.#frozen) {
      info.fault = "frozen";
      return cut();
    }

    for (const rule of this.rules) {
      const fault = rule(info);
      if (!fault) continue;
      info.fault = fault.kind === "status" ? `status ${fault.code}` : fault.kind;
      switch (fault.kind) {
        case "status":
          info.code = fault.code;
          return statusResponse(fault.code, fault.reason, fault.retryAfterSeconds);
        case "reset":
          return cut();
        case "delay":
          await new Promise((r) => setTimeout(r, fault.ms));
          if (this.#frozen) return cut();
          break;
        case "staleList": {
          const first = this.#firstLists.get(listKey(url));
          if (!info.list || !first) info.fault = undefined;
          if (info.list && first) {
            info.code = first.status;
            return new Response(first.body, {
              status: first.status,
              headers: { "content-type": "application/json" },
            });
          }
          break;
        }
        case "goneEvent":
          if (watch) {
            info.code = 200;
            const line = JSON.stringify({
              type: "ERROR",
              object: statusBody(410, "Expired", "too old resource version (fault proxy)"),
            });
            return new Response(line + "\n", {
              status: 200,
              headers: { "content-type": "application/json" },
            });
          }
          break;
      }
      break;
    }

    const headers = new Headers(req.headers);
    for (const h of ["host", "authorization", "connection", "content-length", "accept-encoding"]) {
      headers.delete(h);
    }
    let upstream: Response;
    try {
      upstream = await fetch(this.#upstream + url.pathname + url.search, {
        method: req.method,
        headers,
        body: info.body,
        client: this.#http,
      });
    } catch {
      // The apiserver is down or the operator went away: the operator sees a dead connection.
      return cut();
    }
    if (watch && upstream.ok && upstream.body) {
      info.code = upstream.status;
      return new Response(this.#filterWatch(upstream.body, info, streamKey(url)), {
        status: upstream.status,
        headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" },
      });
    }
    let text: string;
    try {
      text = await upstream.text();
    } catch {
      return cut();
    }
    if (this.#frozen) return cut(); // frozen while this one was in flight: it never happened
    info.code = upstream.status;
    if (info.list && upstream.ok && !this.#firstLists.has(listKey(url))) {
      this.#firstLists.set(listKey(url), { status: upstream.status, body: text });
    }
    if (write && upstream.ok) {
      info.response = text;
      this.writes++;
      try {
        this.onWrite?.(info, this.writes);
      } catch {
        // a test hook must not break the proxy
      }
    }
    const out = new Headers();
    for (const h of ["content-type", "retry-after", "warning"]) {
      const v = upstream.headers.get(h);
      if (v) out.set(h, v);
    }
    return new Response(text, { status: upstream.status, headers: out });
  }

  /** The upstream watch stream, line by line through `watchFilter`. */
  #filterWatch(
    body: ReadableStream<Uint8Array>,
    req: ProxiedRequest,
    stream: string,
  ): ReadableStream<Uint8Array> {
    const encoder = new TextEncoder();
    const lines = new LineBuffer();
    const reader = body.getReader();
    let ctl!: ReadableStreamDefaultController<Uint8Array>;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      this.#watches.delete(end);
      reader.cancel().catch(() => {});
      try {
        ctl.close();
      } catch {
        // already closed or errored
      }
    };
    const send = (line: string) => {
      if (ended) return;
      try {
        ctl.enqueue(encoder.encode(line + "\n"));
      } catch {
        end();
      }
    };
    const pump = async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done || ended) break;
          for (const line of lines.push(value)) {
            if (this.#frozen) return;
            const verdict = this.#verdict(line, req);
            if (verdict === "drop") continue;
            if (verdict === "pass") send(line);
            else if ("replace" in verdict) send(JSON.stringify(verdict.replace));
            else {
              // Held back: everything after it waits too, so order is kept.
              await new Promise((r) => setTimeout(r, verdict.delayMs));
              send(line);
            }
          }
        }
      } catch {
        // upstream or downstream went away
      } finally {
        end();
      }
    };
    return new ReadableStream<Uint8Array>({
      start: (c) => {
        ctl = c;
        this.#watches.set(end, stream);
        this.#track(pump());
      },
      cancel: () => end(),
    });
  }

  #verdict(line: string, req: ProxiedRequest): WatchVerdict {
    if (!this.watchFilter) return "pass";
    let event: ProxiedWatchEvent;
    try {
      event = JSON.parse(line);
    } catch {
      return "pass";
    }
    return this.watchFilter(event, req);
  }
}
