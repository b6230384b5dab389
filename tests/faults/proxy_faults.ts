/** What the fault proxy (proxy.ts) records of each request, and how a test tells it to misbehave. */
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";

/** One request as the proxy saw it. */
export interface ProxiedRequest {
  id: number;
  /** performance.now() when it arrived. */
  at: number;
  method: string;
  path: string;
  query: URLSearchParams;
  watch: boolean;
  /** POST, PUT, PATCH or DELETE. */
  write: boolean;
  /** Collection list (a GET without a name that is not a watch). */
  list: boolean;
  /** "miniclusters", "configmaps", ... (the plural in the path), "" when unknown. */
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  /** Request body (writes only). */
  body?: string;
  /** HTTP code of the answer the operator got; 0: connection reset, no answer. */
  code?: number;
  /** Set when the proxy answered itself (a fault) instead of the apiserver. */
  fault?: string;
  /** Response body of a successful write. */
  response?: string;
}

/** What a rule does to a request. */
export type Fault =
  | { kind: "status"; code: number; reason?: string; retryAfterSeconds?: number }
  /** Cut the TCP connection the request came on; the operator gets no answer. */
  | { kind: "reset" }
  /** Wait, then forward as usual. */
  | { kind: "delay"; ms: number }
  /** For a list: answer with the first answer ever recorded for the same list. */
  | { kind: "staleList" }
  /** For a watch: a 200 stream with one ERROR event (410 Expired), as the apiserver sends it. */
  | { kind: "goneEvent" };

export type Rule = (req: ProxiedRequest) => Fault | undefined;

/** A watch event on its way to the operator. */
export interface ProxiedWatchEvent {
  type: string;
  object: { kind?: string; metadata?: ObjectMeta; [k: string]: unknown };
}

/** What to do with one watch event: forward it, drop it, hold it back, or forward another. */
export type WatchVerdict =
  | "pass"
  | "drop"
  | { delayMs: number }
  | { replace: ProxiedWatchEvent };

export type WatchFilter = (event: ProxiedWatchEvent, req: ProxiedRequest) => WatchVerdict;

export interface FaultProxyOptions {
  /** The real cluster's kubeconfig (server, CA and admin credentials). */
  kubeconfig: string;
  /** Directory for the operator's kubeconfig; default a new temp dir, removed by close(). */
  dir?: string;
}
