/**
 * Whom an aggregated API server believes: the API server's front proxy. The aggregator calls an
 * APIService's backend with a client certificate signed by the request-header CA and names the
 * user it authenticated in headers (X-Remote-User, X-Remote-Group). Those headers are believed
 * only from a connection whose certificate that CA signed and whose common name is one of the
 * allowed names; anything else (a pod calling the Service directly) is nobody.
 *
 * The API server publishes that trust in kube-system's ConfigMap extension-apiserver-authentication
 * (readable through the Role extension-apiserver-authentication-reader).
 */

/** Where the API server publishes the front proxy's trust. */
export const AUTHENTICATION_CONFIGMAP = {
  namespace: "kube-system",
  name: "extension-apiserver-authentication",
} as const;

export interface FrontProxyTrust {
  /** PEM of the CA that signs the front proxy's client certificate. */
  caPem: string;
  /** Common names a client certificate may carry; empty: any the CA signed. */
  allowedNames: readonly string[];
  /** Headers that carry the user's name and groups, lower-case, first present wins. */
  usernameHeaders: readonly string[];
  groupHeaders: readonly string[];
}

/** The request-header half of the ConfigMap's data; throws when the API server has no front proxy. */
export function parseFrontProxyTrust(data: Record<string, string> | undefined): FrontProxyTrust {
  const caPem = data?.["requestheader-client-ca-file"]?.trim();
  if (!caPem) {
    throw new Error(
      `${AUTHENTICATION_CONFIGMAP.namespace}/${AUTHENTICATION_CONFIGMAP.name} has no ` +
        "requestheader-client-ca-file: the API server runs without the aggregation layer " +
        "(--requestheader-client-ca-file), so it cannot call an aggregated API",
    );
  }
  const list = (key: string, fallback: string[]): string[] => {
    const raw = data?.[key];
    if (raw === undefined || raw === "") return fallback;
    const parsed: unknown = JSON.parse(raw);
    if (!Array.isArray(parsed) || parsed.some((x) => typeof x !== "string")) {
      throw new Error(`${AUTHENTICATION_CONFIGMAP.name}: ${key} is not a JSON list of strings`);
    }
    return parsed as string[];
  };
  return {
    caPem: `${caPem}\n`,
    allowedNames: list("requestheader-allowed-names", []),
    usernameHeaders: list("requestheader-username-headers", ["X-Remote-User"]).map(lower),
    groupHeaders: list("requestheader-group-headers", ["X-Remote-Group"]).map(lower),
  };
}

function lower(s: string): string {
  return s.toLowerCase();
}

const AUTHENTICATED = "system:authenticated";

/** The user the front proxy authenticated. */
export interface RemoteUser {
  user: string;
  groups: string[];
}

/** What the TLS layer says of a connection's client certificate. */
export interface PeerCertificate {
  /** Signed by the request-header CA (the TLS layer checked the chain). */
  authorized: boolean;
  /** Its subject's common name, when it sent one. */
  commonName?: string;
}

/**
 * The user a request speaks for, or why it speaks for nobody. Pure: `headers` maps lower-case
 * names to their values (a repeated header as a list).
 */
export function remoteUser(
  trust: FrontProxyTrust,
  peer: PeerCertificate,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): RemoteUser | { refused: string } {
  if (!peer.authorized) {
    return { refused: "no client certificate signed by the request-header CA" };
  }
  if (trust.allowedNames.length > 0 && !trust.allowedNames.includes(peer.commonName ?? "")) {
    return { refused: `client certificate ${peer.commonName ?? "(no CN)"} is not an allowed name` };
  }
  const values = (name: string): string[] => {
    const v = headers[name];
    return v === undefined ? [] : Array.isArray(v) ? v : [v];
  };
  const user = trust.usernameHeaders.map(values).find((v) => v.length > 0)?.[0];
  if (!user) return { refused: "the front proxy named no user" };
  const groups = trust.groupHeaders.flatMap(values).flatMap((v) => v.split(",")).map((g) =>
    g.trim()
  ).filter((g) => g !== "");
  // Every authenticated user is in system:authenticated, as the API server's own authenticators
  // add it: the aggregator names none when it fetches discovery as system:kube-aggregator, and
  // RBAC grants discovery (system:discovery) to that group.
  if (!groups.includes(AUTHENTICATED)) groups.push(AUTHENTICATED);
  return { user, groups };
}
