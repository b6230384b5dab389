/**
 * An aggregated API's HTTPS endpoint: TLS with the serving certificate, the caller's client
 * certificate checked against the front proxy's CA (front_proxy.ts), every request authorized for
 * the user the front proxy names (authorizer.ts), then answered by the API's routes. Answers and
 * refusals are JSON, refusals as a metav1 Status, as the API server would write them.
 *
 * node:https rather than Deno.serve: Deno.serve cannot ask for a client certificate.
 */
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import type { Authorizer, RequestAttributes } from "./authorizer.ts";
import { type FrontProxyTrust, remoteUser } from "./front_proxy.ts";
import type { ServingCert } from "./serving_cert.ts";

/** What a route answers: a status code and a JSON body. */
export interface Answer {
  status: number;
  body: unknown;
}

/** A request the API knows: what to authorize, and how to answer once allowed. */
export interface Route {
  attributes: RequestAttributes;
  answer(): Answer | Promise<Answer>;
}

export interface AggregatedServerOptions {
  port: number;
  hostname?: string;
  tls: ServingCert;
  trust: FrontProxyTrust;
  authorizer: Pick<Authorizer, "authorize">;
  /** The route of a GET, or undefined: 404. */
  route(path: string, query: URLSearchParams): Route | undefined;
  /** A handler failed (the answer is a 500). */
  onError?: (error: unknown) => void;
}

export interface AggregatedServer {
  port: number;
  shutdown(): Promise<void>;
}

/** A metav1 Status, the body of every refusal. */
export function statusAnswer(code: number, reason: string, message: string): Answer {
  return {
    status: code,
    body: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason,
      code,
    },
  };
}

export function startAggregatedServer(opts: AggregatedServerOptions): Promise<AggregatedServer> {
  const handle = async (req: IncomingMessage): Promise<Answer> => {
    const socket = req.socket as TLSSocket;
    const who = remoteUser(opts.trust, {
      authorized: socket.authorized === true,
      commonName: socket.getPeerCertificate?.()?.subject?.CN as string | undefined,
    }, req.headers);
    if ("refused" in who) return statusAnswer(401, "Unauthorized", who.refused);
    const url = new URL(req.url ?? "/", "https://aggregated");
    if (req.method !== "GET") {
      return statusAnswer(405, "MethodNotAllowed", `${req.method} is not supported`);
    }
    const route = opts.route(url.pathname, url.searchParams);
    if (!route) return statusAnswer(404, "NotFound", `${url.pathname} is not served here`);
    const decision = await opts.authorizer.authorize(who, route.attributes);
    if (!decision.allowed) {
      return statusAnswer(
        403,
        "Forbidden",
        `user "${who.user}" may not ${route.attributes.verb} ${url.pathname}` +
          (decision.reason ? `: ${decision.reason}` : ""),
      );
    }
    return await route.answer();
  };
  const server = https.createServer({
    key: opts.tls.keyPem,
    cert: opts.tls.certPem,
    ca: opts.trust.caPem,
    requestCert: true,
    // Checked per request instead, so that a caller without a certificate gets a 401 it can read.
    rejectUnauthorized: false,
  }, (req: IncomingMessage, res: ServerResponse) => {
    handle(req).catch((e) => {
      opts.onError?.(e);
      return statusAnswer(500, "InternalError", "the answer failed; see the operator's log");
    }).then((answer) => {
      const body = JSON.stringify(answer.body);
      res.writeHead(answer.status, { "Content-Type": "application/json" });
      res.end(body);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.hostname ?? "0.0.0.0", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : opts.port;
      let closed: Promise<void> | undefined;
      resolve({
        port,
        shutdown: () =>
          closed ??= new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections?.();
          }),
      });
    });
  });
}
