/**
 * How a client reaches the API server of a `ClusterConnection`: which transport (HTTP/1.1 of our
 * own or `fetch`), and the options each takes from the connection (certificates, a proxy).
 */
import type { ClusterConnection } from "../../config/kubeconfig.ts";
import { KubeconfigError } from "../../config/kubeconfig_error.ts";

/** What a client may be asked to travel by (`--api-transport`): "auto" decides by transportOf. */
export const API_TRANSPORTS = ["auto", "http1", "fetch"] as const;
export type ApiTransport = typeof API_TRANSPORTS[number];
/** How a client's requests and watches do travel. */
export type Transport = Exclude<ApiTransport, "auto">;

/** The CA certificates and client certificate of `conn`, as Deno's HTTP and TLS clients take them. */
export function tlsOptionsOf(
  conn: ClusterConnection,
): Deno.CreateHttpClientOptions & Partial<Deno.TlsCertifiedKeyPem> {
  const tls: Deno.CreateHttpClientOptions & Partial<Deno.TlsCertifiedKeyPem> = {};
  if (conn.caCerts?.length) tls.caCerts = conn.caCerts;
  if (conn.clientCert && conn.clientKey) {
    tls.cert = conn.clientCert;
    tls.key = conn.clientKey;
  }
  return tls;
}

/**
 * A kubeconfig's `proxy-url` as `fetch` takes it: the transport from the scheme, and a user and
 * password in the URL as the proxy's basic auth (as client-go sends them).
 */
export function proxyOf(proxyUrl: string): Deno.Proxy {
  const url = new URL(proxyUrl);
  const transport = url.protocol === "socks5:"
    ? "socks5"
    : url.protocol === "https:"
    ? "https"
    : "http";
  if (!url.username) return { transport, url: proxyUrl };
  const basicAuth = {
    username: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
  };
  url.username = "";
  url.password = "";
  return { transport, url: url.href.replace(/\/$/, ""), basicAuth };
}

/**
 * The transport of a client (ClientOptions `transport`): HTTP/1.1 unless `fetch` is asked for or
 * needed. Only `fetch` goes through a proxy (`proxy-url`, or a proxy variable when "auto") or skips
 * TLS verification; only HTTP/1.1 checks the certificate against a `tls-server-name`. A kubeconfig
 * that needs what the transport asked for lacks, or what neither has, is refused, saying why.
 */
export function transportOf(
  conn: ClusterConnection,
  asked: ApiTransport = "auto",
): Transport {
  const fetchOnly = [
    ...(conn.insecureSkipTLSVerify ? ["insecure-skip-tls-verify"] : []),
    ...(conn.proxyUrl ? ["proxy-url"] : []),
  ];
  const http1Only = conn.tlsServerName ? ["tls-server-name"] : [];
  if (fetchOnly.length && http1Only.length) {
    throw new KubeconfigError(
      `this kubeconfig's ${fetchOnly.join(" and ")} needs the fetch transport and its ` +
        `${http1Only[0]} the HTTP/1.1 one; neither does both`,
    );
  }
  if (asked === "http1" && fetchOnly.length) {
    throw new KubeconfigError(
      `the HTTP/1.1 transport neither goes through a proxy nor skips TLS verification, which ` +
        `this kubeconfig's ${fetchOnly.join(" and ")} asks for: use transport auto or fetch`,
    );
  }
  if (asked === "fetch" && http1Only.length) {
    throw new KubeconfigError(
      "the fetch transport cannot check the server's certificate against another name than the " +
        "server's host, which this kubeconfig's tls-server-name asks for: use transport auto or http1",
    );
  }
  if (asked !== "auto") return asked;
  if (fetchOnly.length) return "fetch";
  if (http1Only.length) return "http1";
  const proxyVariables = ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"];
  try {
    for (const name of proxyVariables) {
      if (Deno.env.get(name) || Deno.env.get(name.toLowerCase())) return "fetch";
    }
  } catch {
    return "fetch";
  }
  return "http1";
}
