/**
 * What the HTTP transport costs our operator's process, apart from the operator (issue 37's CPU
 * item). Each way of talking to the API server runs in a process of its own, whose CPU is read
 * from /proc:
 *
 * - `deno run -A bench/transport_cost.ts requests [--n=5000] [--reps=2]` — on a control plane of
 *   its own, N create-only applies of a 1 KiB ConfigMap, 8 at once (the operator's bound on writes
 *   in flight), through our KubeClient, through Deno's `fetch` alone, and through a minimal HTTP/1.1
 *   client over `Deno.connectTls` (one keep-alive connection per worker).
 * - `deno run -A bench/transport_cost.ts watch --kubeconfig=K [--seconds=150]` — beside a bench run
 *   on the cluster of K (`deno task bench --peer --size=1 --n=1000 --only=ours`), the kinds the
 *   operator watches, watched in every namespace through KubeClient.watch (Deno's `fetch` over
 *   HTTP/2) and through a minimal HTTP/1.1 reader over `Deno.connectTls`; both parse every object
 *   as the operator does (watch_lines.ts).
 *
 * The minimal HTTP/1.1 client is a measuring instrument, not a client to use: it follows no
 * proxy, retries nothing and knows only what the API server answers here.
 */
import { parseArgs } from "node:util";
import { KubeClient, tlsOptionsOf } from "../runtime/client/client.ts";
import { type ClusterConnection, loadKubeconfig } from "../runtime/config/kubeconfig.ts";
import {
  ConfigMaps,
  Jobs,
  Pods,
  resourcePath,
  type ResourceType,
  Secrets,
  Services,
} from "../runtime/client/resources.ts";
import { LineBuffer, watchLineEvent } from "../runtime/client/watch_lines.ts";
import { MiniClusters } from "../api/resource.ts";
import { MiniClusterWorkspaces } from "../api/workspace.ts";
import { startPrivateCluster } from "../testing/private_cluster.ts";
import { readCpuSeconds } from "../testing/operator_process.ts";

const WORKERS = 8;
const WATCHED: ResourceType[] = [
  MiniClusters,
  MiniClusterWorkspaces,
  ConfigMaps,
  Secrets,
  Services,
  Jobs,
  Pods,
];
const APPLY = "application/apply-patch+yaml";
const CRLF = [13, 10];

/** Bytes read from a connection, consumed from the front. */
class ByteReader {
  #buffer = new Uint8Array(0);
  readonly #chunk = new Uint8Array(256 * 1024);
  reads = 0;
  constructor(readonly conn: Deno.Conn) {}

  /** Reads once more; false at the end of the stream. */
  async #more(): Promise<boolean> {
    const n = await this.conn.read(this.#chunk);
    this.reads++;
    if (n === null) return false;
    const joined = new Uint8Array(this.#buffer.length + n);
    joined.set(this.#buffer);
    joined.set(this.#chunk.subarray(0, n), this.#buffer.length);
    this.#buffer = joined;
    return true;
  }

  /** The bytes before the next `marker` (the marker consumed too); undefined at the end. */
  async until(marker: number[]): Promise<Uint8Array | undefined> {
    let from = 0;
    while (true) {
      // The marker's first byte found natively, the rest compared only there.
      for (let i = this.#buffer.indexOf(marker[0], from); i >= 0;) {
        if (i + marker.length > this.#buffer.length) break;
        if (marker.every((b, k) => this.#buffer[i + k] === b)) {
          const out = this.#buffer.subarray(0, i);
          this.#buffer = this.#buffer.subarray(i + marker.length);
          return out;
        }
        i = this.#buffer.indexOf(marker[0], i + 1);
      }
      from = Math.max(0, this.#buffer.length - marker.length + 1);
      if (!await this.#more()) return undefined;
    }
  }

  /** Up to `n` bytes (at least one unless at the end). */
  async some(n: number): Promise<Uint8Array | undefined> {
    if (this.#buffer.length === 0 && !await this.#more()) return undefined;
    const out = this.#buffer.subarray(0, Math.min(n, this.#buffer.length));
    this.#buffer = this.#buffer.subarray(out.length);
    return out;
  }
}

const decoder = new TextDecoder();

/** A response's status line and headers, then its body's bytes as they come to `onData`. */
async function readResponse(
  reader: ByteReader,
  onData: (bytes: Uint8Array) => void,
): Promise<string> {
  const head = await reader.until([...CRLF, ...CRLF]);
  if (head === undefined) throw new Error("connection closed before a response");
  const headText = decoder.decode(head);
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(headText);
  if (length) {
    for (let left = Number(length[1]); left > 0;) {
      const bytes = await reader.some(left);
      if (bytes === undefined) throw new Error("connection closed in a body");
      onData(bytes);
      left -= bytes.length;
    }
    return headText;
  }
  // Chunked: a size line, its bytes, CRLF; a chunk of size 0 ends it.
  while (true) {
    const sizeLine = await reader.until(CRLF);
    if (sizeLine === undefined) return headText;
    const size = parseInt(decoder.decode(sizeLine), 16);
    if (size === 0) {
      await reader.until(CRLF);
      return headText;
    }
    for (let left = size; left > 0;) {
      const bytes = await reader.some(left);
      if (bytes === undefined) return headText;
      onData(bytes);
      left -= bytes.length;
    }
    await reader.until(CRLF);
  }
}

async function connect(conn: ClusterConnection): Promise<Deno.Conn> {
  const url = new URL(conn.server);
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  if (url.protocol === "http:") return await Deno.connect({ hostname, port });
  return await Deno.connectTls({ hostname, port, ...tlsOptionsOf(conn) });
}

function authHeader(conn: ClusterConnection): string {
  return conn.token ? `Authorization: Bearer ${conn.token}\r\n` : "";
}

function cpuOfSelf(): number {
  return readCpuSeconds(Deno.pid);
}

/** A 1 KiB ConfigMap's apply, as the operator writes a child (create-only apply). */
function configMapApply(run: string, i: number): { path: string; body: string } {
  const name = `cm-${run}-${i}`;
  return {
    path: `${
      resourcePath(ConfigMaps, { namespace: "default", name })
    }?fieldManager=bench&force=true`,
    body: JSON.stringify({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: "default", labels: { app: "transport-cost" } },
      data: { text: "x".repeat(1024) },
    }),
  };
}

/** N applies by WORKERS workers through `way`; prints the process's CPU for them. */
async function requests(way: string, conn: ClusterConnection, n: number): Promise<void> {
  let next = 0;
  const run = `${way}-${Date.now()}`;
  const cpu0 = cpuOfSelf();
  const t0 = performance.now();
  if (way === "client") {
    const client = new KubeClient(conn);
    await Promise.all(Array.from({ length: WORKERS }, async () => {
      while (next < n) {
        const { path, body } = configMapApply(run, next++);
        await client.request("PATCH", path, body, { contentType: APPLY });
      }
    }));
    client.close();
  } else if (way === "fetch") {
    const client = Deno.createHttpClient(tlsOptionsOf(conn) as Deno.CreateHttpClientOptions);
    await Promise.all(Array.from({ length: WORKERS }, async () => {
      while (next < n) {
        const { path, body } = configMapApply(run, next++);
        const response = await fetch(conn.server + path, {
          method: "PATCH",
          headers: [["Accept", "application/json"], ["Content-Type", APPLY]],
          body,
          client,
        });
        const text = await response.text();
        if (!response.ok) throw new Error(text);
        JSON.parse(text);
      }
    }));
    client.close();
  } else {
    const encoder = new TextEncoder();
    const host = new URL(conn.server).host;
    await Promise.all(Array.from({ length: WORKERS }, async () => {
      const socket = await connect(conn);
      const reader = new ByteReader(socket);
      while (next < n) {
        const { path, body } = configMapApply(run, next++);
        const payload = encoder.encode(body);
        const head = encoder.encode(
          `PATCH ${path} HTTP/1.1\r\nHost: ${host}\r\n${authHeader(conn)}` +
            `Accept: application/json\r\nContent-Type: ${APPLY}\r\n` +
            `Content-Length: ${payload.length}\r\n\r\n`,
        );
        const request = new Uint8Array(head.length + payload.length);
        request.set(head);
        request.set(payload, head.length);
        for (let written = 0; written < request.length;) {
          written += await socket.write(request.subarray(written));
        }
        const parts: Uint8Array[] = [];
        const status = await readResponse(reader, (bytes) => parts.push(bytes.slice()));
        const text = parts.map((p) => decoder.decode(p, { stream: true })).join("") +
          decoder.decode();
        if (!status.startsWith("HTTP/1.1 2")) throw new Error(`${status}\n${text}`);
        JSON.parse(text);
      }
      socket.close();
    }));
  }
  console.log(JSON.stringify({
    way,
    requests: n,
    cpuSeconds: +(cpuOfSelf() - cpu0).toFixed(2),
    wallSeconds: +((performance.now() - t0) / 1000).toFixed(1),
  }));
}

/** Every kind of WATCHED watched for `seconds` through `way`; prints events and the CPU. */
async function watches(way: string, conn: ClusterConnection, seconds: number): Promise<void> {
  let events = 0;
  let reads = 0;
  const readers: ByteReader[] = [];
  const client = way === "client" ? new KubeClient(conn) : undefined;
  const abort = new AbortController();
  for (const rt of WATCHED) {
    (async () => {
      if (client) {
        for await (
          const _ of client.watch(rt, { dropManagedFields: true, signal: abort.signal })
        ) events++;
        return;
      }
      const socket = await connect(conn);
      const reader = new ByteReader(socket);
      readers.push(reader);
      const path = `${resourcePath(rt, {})}?watch=true`;
      await socket.write(new TextEncoder().encode(
        `GET ${path} HTTP/1.1\r\nHost: ${new URL(conn.server).host}\r\n${authHeader(conn)}` +
          `Accept: application/json\r\n\r\n`,
      ));
      const lines = new LineBuffer();
      await readResponse(reader, (bytes) => {
        for (const line of lines.push(bytes)) {
          watchLineEvent(line, rt, { dropManagedFields: true });
          events++;
        }
      });
    })().catch((e) => {
      if (!abort.signal.aborted) console.error(`${way} ${rt.plural}: ${e}`);
    });
  }
  const cpu0 = cpuOfSelf();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  for (const r of readers) reads += r.reads;
  console.log(JSON.stringify({
    way,
    events,
    ...(way === "raw" ? { reads } : {}),
    cpuSeconds: +(cpuOfSelf() - cpu0).toFixed(2),
  }));
  abort.abort();
  Deno.exit(0);
}

/** Runs this file again as one way's process; its one line of JSON. */
async function child(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, ...args],
    stdin: "null",
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) throw new Error(`transport_cost ${args.join(" ")} failed: ${text}`);
  return text;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      n: { type: "string", default: "5000" },
      reps: { type: "string", default: "2" },
      seconds: { type: "string", default: "150" },
      kubeconfig: { type: "string" },
      as: { type: "string" },
    },
  });
  const [what] = positionals;
  if (what !== "requests" && what !== "watch") {
    console.error(
      "usage: transport_cost.ts requests [--n=5000] [--reps=2] | " +
        "watch --kubeconfig=K [--seconds=150]",
    );
    Deno.exit(2);
  }
  if (values.as) {
    const conn = await loadKubeconfig(values.kubeconfig!);
    if (what === "requests") await requests(values.as, conn, Number(values.n));
    else await watches(values.as, conn, Number(values.seconds));
    Deno.exit(0);
  }
  if (what === "requests") {
    const kubeconfig = values.kubeconfig ?? await startPrivateCluster({
      prefix: "minicluster-transport-cost-",
      controlPlaneOnly: true,
    });
    for (let rep = 0; rep < Number(values.reps); rep++) {
      for (const way of ["client", "fetch", "raw"]) {
        console.log(
          await child([what, `--as=${way}`, `--kubeconfig=${kubeconfig}`, `--n=${values.n}`]),
        );
      }
    }
  } else {
    if (!values.kubeconfig) throw new Error("watch needs --kubeconfig (a cluster a bench runs on)");
    const lines = await Promise.all(
      ["client", "raw"].map((way) =>
        child([
          what,
          `--as=${way}`,
          `--kubeconfig=${values.kubeconfig}`,
          `--seconds=${values.seconds}`,
        ])
      ),
    );
    for (const line of lines) console.log(line);
  }
  Deno.exit(0);
}
