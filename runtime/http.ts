/**
 * The operator's own HTTP endpoint: liveness (`/healthz`), readiness (`/readyz`) and Prometheus
 * metrics (`/metrics`). Kept apart from any API handling so that probes stay cheap and answer
 * even while workers are busy.
 */
import { CONTENT_TYPE, type Registry } from "./metrics/metrics.ts";

export interface HealthServerOptions {
  /** 0 picks a free port (tests); the chosen one is returned. */
  port: number;
  hostname?: string;
  /** Ready = caches synced (and, for a standby, still able to take over). */
  isReady: () => boolean;
  /** Live unless this says otherwise (a wedged loop); defaults to always live. */
  isLive?: () => boolean;
  /** Rendered on /metrics; without it /metrics answers 404. */
  metrics?: Registry | (() => string);
  /** Called when the handler itself fails, e.g. a collector throws. */
  onError?: (error: unknown) => void;
}

export interface HealthServer {
  port: number;
  hostname: string;
  /** Stops accepting connections and waits for in-flight responses. */
  shutdown(): Promise<void>;
}

export function startHealthServer(opts: HealthServerOptions): HealthServer {
  const render = typeof opts.metrics === "function"
    ? opts.metrics
    : opts.metrics
    ? () => (opts.metrics as Registry).render()
    : undefined;

  const handler = (req: Request): Response => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      return text(405, "method not allowed\n", { Allow: "GET, HEAD" });
    }
    const { pathname } = new URL(req.url);
    try {
      switch (pathname) {
        case "/healthz":
        case "/livez":
          return (opts.isLive?.() ?? true) ? text(200, "ok\n") : text(500, "not live\n");
        case "/readyz":
          return opts.isReady() ? text(200, "ok\n") : text(503, "not ready\n");
        case "/metrics":
          if (!render) return text(404, "metrics disabled\n");
          return text(200, render(), { "Content-Type": CONTENT_TYPE });
        default:
          return text(404, "not found\n");
      }
    } catch (e) {
      opts.onError?.(e);
      return text(500, "internal error\n");
    }
  };

  const server = Deno.serve({
    port: opts.port,
    hostname: opts.hostname ?? "0.0.0.0",
    onListen: () => {}, // the caller logs the address in its own format
  }, handler);
  const addr = server.addr as Deno.NetAddr;
  let stopped: Promise<void> | undefined;
  return {
    port: addr.port,
    hostname: addr.hostname,
    shutdown: () => (stopped ??= server.shutdown()),
  };
}

function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { "Content-Type": "text/plain; charset=utf-8", ...headers },
  });
}
