/**
 * Kubeconfig and in-cluster configuration → one resolved `ClusterConnection`.
 *
 * Only what a controller needs is supported: server URL, CA, `tls-server-name`, `proxy-url` (http,
 * https or socks5), client certificate/key (inline `-data` or file paths, resolved relative to the
 * kubeconfig file like kubectl does), bearer token (inline or `tokenFile`), exec credential plugins
 * that give tokens (exec_credentials.ts), basic auth, impersonation (`as`, `as-uid`, `as-groups`,
 * `as-user-extra`), and the context's namespace. The long-deprecated `auth-provider` plugins are
 * refused with a clear error instead of being half-supported.
 *
 * The YAML parser is imported only for a kubeconfig that is not JSON: any npm module wakes Deno's
 * Node compatibility layer, about 11 MiB of resident memory for the life of the process, and the
 * operator in a cluster (ServiceAccount credentials) or with a JSON kubeconfig never needs it.
 */

import { EXEC_API_VERSIONS, type ExecConfig } from "./exec_credentials.ts";
import { KubeconfigError } from "./kubeconfig_error.ts";

/** Where the kubelet mounts a Pod's ServiceAccount credentials. */
const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Everything needed to reach and authenticate to one API server. */
export interface ClusterConnection {
  /** Base URL of the API server, without a trailing slash. */
  server: string;
  /** Extra trusted CA certificates (PEM), in addition to the system roots. */
  caCerts?: string[];
  /** Client certificate chain and private key (PEM) for mTLS. */
  clientCert?: string;
  clientKey?: string;
  /** A static bearer token. */
  token?: string;
  /** A file holding a bearer token that may be rotated on disk (re-read periodically). */
  tokenFile?: string;
  basicAuth?: { username: string; password: string };
  /** Whom requests act as (a user's `as` and friends), sent as Impersonate-* headers. */
  impersonate?: Impersonation;
  /** An exec credential plugin that gives bearer tokens. */
  exec?: ExecConfig;
  /**
   * Set by `insecure-skip-tls-verify`. Deno cannot disable verification per HTTP client; the
   * process must run with `--unsafely-ignore-certificate-errors` for such a cluster to work.
   */
  insecureSkipTLSVerify?: boolean;
  /**
   * `tls-server-name`: the name the server's certificate is checked against (and sent as SNI)
   * instead of the server URL's host.
   */
  tlsServerName?: string;
  /** `proxy-url`: the proxy every connection goes through (http://, https:// or socks5://). */
  proxyUrl?: string;
  /** The default namespace: the context's, the ServiceAccount's, or "default". */
  namespace: string;
  /** Name of the kubeconfig context used; undefined for in-cluster. */
  context?: string;
}

/** The subset of the kubeconfig (clientcmd v1 Config) schema that is read. */
export interface Kubeconfig {
  "current-context"?: string;
  clusters?: { name: string; cluster: KubeconfigCluster }[];
  users?: { name: string; user: KubeconfigUser }[];
  contexts?: { name: string; context: KubeconfigContext }[];
}

export interface KubeconfigCluster {
  server: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "tls-server-name"?: string;
  "proxy-url"?: string;
}

export interface KubeconfigUser {
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  exec?: KubeconfigExec;
  "auth-provider"?: unknown;
  as?: string;
  "as-uid"?: string;
  "as-groups"?: string[];
  "as-user-extra"?: Record<string, string[]>;
}

/** Impersonation: the user requests act as, with its uid, groups and extra fields. */
export interface Impersonation {
  user: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** A user's `exec` stanza (client.authentication.k8s.io ExecConfig). */
export interface KubeconfigExec {
  apiVersion?: string;
  command?: string;
  args?: string[];
  env?: { name: string; value: string }[] | null;
  installHint?: string;
  provideClusterInfo?: boolean;
  interactiveMode?: string;
}

export interface KubeconfigContext {
  cluster: string;
  user?: string;
  namespace?: string;
}

/** Parses one kubeconfig document (YAML or JSON); checks only its shape, not its references. */
export async function parseKubeconfig(text: string, source = "kubeconfig"): Promise<Kubeconfig> {
  let doc: unknown;
  try {
    doc = await parseDocument(text);
  } catch (e) {
    throw new KubeconfigError(`${source}: invalid YAML: ${(e as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new KubeconfigError(`${source}: expected a mapping at the top level`);
  }
  const kc = doc as Kubeconfig;
  for (const key of ["clusters", "users", "contexts"] as const) {
    const list = kc[key];
    if (list === undefined || list === null) {
      delete kc[key];
      continue;
    }
    if (!Array.isArray(list)) throw new KubeconfigError(`${source}: "${key}" must be a list`);
    for (const entry of list) {
      if (!entry || typeof entry.name !== "string") {
        throw new KubeconfigError(`${source}: every entry of "${key}" needs a name`);
      }
    }
  }
  return kc;
}

/** JSON (a subset of YAML) without the YAML parser when it parses as such; YAML otherwise. */
async function parseDocument(text: string): Promise<unknown> {
  if (text.trimStart().startsWith("{")) {
    try {
      return JSON.parse(text);
    } catch {
      // YAML flow mappings also start with "{": let the YAML parser decide.
    }
  }
  const { parse } = await import("yaml");
  return parse(text);
}

/**
 * Merges several kubeconfigs the way `$KUBECONFIG=a:b` does: the first file to define a named
 * cluster/user/context or the current-context wins.
 */
export function mergeKubeconfigs(configs: Kubeconfig[]): Kubeconfig {
  const merged: Required<Pick<Kubeconfig, "clusters" | "users" | "contexts">> & Kubeconfig = {
    clusters: [],
    users: [],
    contexts: [],
  };
  for (const kc of configs) {
    merged["current-context"] ||= kc["current-context"];
    for (const key of ["clusters", "users", "contexts"] as const) {
      const target = merged[key] as { name: string }[];
      for (const entry of (kc[key] ?? []) as { name: string }[]) {
        if (!target.some((e) => e.name === entry.name)) target.push(entry);
      }
    }
  }
  if (!merged["current-context"]) delete merged["current-context"];
  return merged;
}

/** Reads files named by the kubeconfig; injectable so resolution is testable without disk. */
export type ReadTextFile = (path: string) => Promise<string>;

export interface ResolveOptions {
  /** Context to use instead of `current-context`. */
  context?: string;
  /** Directory that relative file paths in the kubeconfig are relative to. */
  baseDir?: string;
  readTextFile?: ReadTextFile;
}

/** Resolves a context of a parsed kubeconfig into a connection, reading referenced files. */
export async function resolveKubeconfig(
  kc: Kubeconfig,
  opts: ResolveOptions = {},
): Promise<ClusterConnection> {
  const read = opts.readTextFile ?? ((p: string) => Deno.readTextFile(p));
  const contextName = opts.context || kc["current-context"];
  if (!contextName) {
    throw new KubeconfigError("no context given and the kubeconfig has no current-context");
  }
  const ctx = kc.contexts?.find((c) => c.name === contextName)?.context;
  if (!ctx) throw new KubeconfigError(`context "${contextName}" not found in kubeconfig`);
  const cluster = kc.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
  if (!cluster) {
    throw new KubeconfigError(`cluster "${ctx.cluster}" of context "${contextName}" not found`);
  }
  if (!cluster.server) throw new KubeconfigError(`cluster "${ctx.cluster}" has no server`);
  const user: KubeconfigUser = ctx.user
    ? kc.users?.find((u) => u.name === ctx.user)?.user ?? missingUser(ctx.user, contextName)
    : {};
  if (user["auth-provider"]) {
    throw new KubeconfigError(`user "${ctx.user}": auth-provider plugins are not supported`);
  }

  const resolvePath = (p: string) => absolutePath(p, opts.baseDir);
  const inlineOrFile = async (data: string | undefined, file: string | undefined) => {
    if (data) return decodeBase64(data);
    if (file) return await read(resolvePath(file));
    return undefined;
  };

  const conn: ClusterConnection = {
    server: cluster.server.replace(/\/+$/, ""),
    namespace: ctx.namespace || "default",
    context: contextName,
  };
  const ca = await inlineOrFile(
    cluster["certificate-authority-data"],
    cluster["certificate-authority"],
  );
  if (ca) conn.caCerts = [ca];
  if (cluster["insecure-skip-tls-verify"]) conn.insecureSkipTLSVerify = true;
  if (cluster["tls-server-name"]) conn.tlsServerName = cluster["tls-server-name"];
  if (cluster["proxy-url"]) conn.proxyUrl = proxyUrl(cluster["proxy-url"], ctx.cluster);

  const cert = await inlineOrFile(user["client-certificate-data"], user["client-certificate"]);
  const key = await inlineOrFile(user["client-key-data"], user["client-key"]);
  if ((cert === undefined) !== (key === undefined)) {
    throw new KubeconfigError(
      `user "${ctx.user}": client certificate and client key must be given together`,
    );
  }
  if (cert !== undefined && key !== undefined) {
    conn.clientCert = cert;
    conn.clientKey = key;
  }
  if (user.token) conn.token = user.token;
  else if (user.tokenFile) conn.tokenFile = resolvePath(user.tokenFile);
  if (user.username !== undefined && user.password !== undefined) {
    conn.basicAuth = { username: user.username, password: user.password };
  }
  const impersonate = impersonation(user, ctx.user ?? "");
  if (impersonate) conn.impersonate = impersonate;
  if (user.exec) conn.exec = execConfig(user.exec, ctx.user ?? "", cluster, opts.baseDir);
  return conn;
}

/**
 * The exec stanza checked and resolved: a command with a `/` is relative to the kubeconfig's
 * directory (as kubectl resolves it), one without is looked up on PATH.
 */
function execConfig(
  exec: KubeconfigExec,
  user: string,
  cluster: KubeconfigCluster,
  baseDir: string | undefined,
): ExecConfig {
  const where = `user "${user}": exec`;
  if (!exec.command) throw new KubeconfigError(`${where}: no command`);
  const apiVersion = exec.apiVersion ?? "";
  if (!(EXEC_API_VERSIONS as readonly string[]).includes(apiVersion)) {
    throw new KubeconfigError(
      `${where}: apiVersion ${apiVersion || "(none)"} is not supported (${
        EXEC_API_VERSIONS.join(", ")
      })`,
    );
  }
  const mode = exec.interactiveMode ?? "IfAvailable";
  if (mode !== "Never" && mode !== "IfAvailable" && mode !== "Always") {
    throw new KubeconfigError(
      `${where}: interactiveMode ${mode} is not Never, IfAvailable or Always`,
    );
  }
  return {
    apiVersion,
    command: exec.command.includes("/") ? absolutePath(exec.command, baseDir) : exec.command,
    args: exec.args ?? [],
    env: Object.fromEntries((exec.env ?? []).map((e) => [e.name, e.value])),
    interactiveMode: mode,
    installHint: exec.installHint,
    cluster: exec.provideClusterInfo
      ? {
        server: cluster.server,
        ...(cluster["certificate-authority-data"]
          ? { "certificate-authority-data": cluster["certificate-authority-data"] }
          : {}),
        ...(cluster["insecure-skip-tls-verify"] ? { "insecure-skip-tls-verify": true } : {}),
        ...(cluster["tls-server-name"] ? { "tls-server-name": cluster["tls-server-name"] } : {}),
        ...(cluster["proxy-url"] ? { "proxy-url": cluster["proxy-url"] } : {}),
      }
      : undefined,
    user,
  };
}

/**
 * A user's impersonation, checked as the API server would: groups, a uid or extra fields without a
 * user to act as are refused.
 */
function impersonation(user: KubeconfigUser, name: string): Impersonation | undefined {
  const groups = user["as-groups"] ?? [];
  const extra = user["as-user-extra"] ?? {};
  const uid = user["as-uid"] || undefined;
  const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === "string");
  if (!strings(groups)) {
    throw new KubeconfigError(`user "${name}": as-groups must be a list of strings`);
  }
  if (
    typeof extra !== "object" || Array.isArray(extra) || !Object.values(extra).every(strings)
  ) {
    throw new KubeconfigError(`user "${name}": as-user-extra must map names to lists of strings`);
  }
  if (!user.as) {
    if (groups.length || uid || Object.keys(extra).length) {
      throw new KubeconfigError(
        `user "${name}": as-groups, as-uid and as-user-extra need a user to act as (as)`,
      );
    }
    return undefined;
  }
  return { user: user.as, uid, groups, extra };
}

/** A cluster's `proxy-url`, checked: the schemes client-go takes (http, https, socks5). */
function proxyUrl(text: string, cluster: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new KubeconfigError(`cluster "${cluster}": proxy-url "${text}" is not a URL`);
  }
  if (!["http:", "https:", "socks5:"].includes(url.protocol)) {
    throw new KubeconfigError(
      `cluster "${cluster}": proxy-url scheme ${url.protocol} is not http, https or socks5`,
    );
  }
  return text;
}

function missingUser(user: string, context: string): never {
  throw new KubeconfigError(`user "${user}" of context "${context}" not found`);
}

/**
 * Loads and resolves kubeconfig file(s). A string names exactly one file (`--kubeconfig`): it must
 * be readable, and a colon in it is part of the name. A list (`$KUBECONFIG`, see
 * `splitKubeconfigList`) is merged; like kubectl, files of it that do not exist are skipped, but
 * when none can be read the error names every path tried.
 */
export async function loadKubeconfig(
  paths: string | string[],
  context?: string,
): Promise<ClusterConnection> {
  const single = !Array.isArray(paths);
  const list = single ? [paths] : paths.filter((p) => p !== "");
  if (list.length === 0 || list[0] === "") throw new KubeconfigError("no kubeconfig path given");
  const configs: Kubeconfig[] = [];
  const read: string[] = [];
  for (const path of list) {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound && !single) continue;
      throw new KubeconfigError(`cannot read kubeconfig ${path}: ${(e as Error).message}`);
    }
    configs.push(await parseKubeconfig(text, path));
    read.push(path);
  }
  if (read.length === 0) {
    throw new KubeconfigError(`no kubeconfig found: none of ${list.join(", ")} exists`);
  }
  // Relative paths are resolved against the file that holds the winning entries; with a single
  // file (the usual case) that is exact, with a list the first file's directory is used.
  try {
    return await resolveKubeconfig(mergeKubeconfigs(configs), {
      context,
      baseDir: dirname(absolutePath(read[0])),
    });
  } catch (e) {
    // Name the file(s): "no current-context" alone does not say which kubeconfig was read.
    if (e instanceof KubeconfigError) {
      throw new KubeconfigError(`kubeconfig ${read.join(":")}: ${e.message}`);
    }
    throw e;
  }
}

/** The ServiceAccount connection of a Pod (`KUBERNETES_SERVICE_HOST/PORT` + mounted files). */
export async function inClusterConnection(
  dir = SERVICE_ACCOUNT_DIR,
  env: { get(key: string): string | undefined } = Deno.env,
): Promise<ClusterConnection> {
  const host = env.get("KUBERNETES_SERVICE_HOST");
  const port = env.get("KUBERNETES_SERVICE_PORT");
  if (!host || !port) {
    throw new KubeconfigError(
      "not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set",
    );
  }
  const hostPart = host.includes(":") ? `[${host}]` : host; // IPv6 literal
  const tokenFile = `${dir}/token`;
  await Deno.stat(tokenFile).catch(() => {
    throw new KubeconfigError(`in-cluster token not found at ${tokenFile}`);
  });
  const conn: ClusterConnection = {
    server: `https://${hostPart}:${port}`,
    tokenFile,
    namespace: (await Deno.readTextFile(`${dir}/namespace`).catch(() => "")).trim() || "default",
  };
  const ca = await Deno.readTextFile(`${dir}/ca.crt`).catch(() => undefined);
  if (ca) conn.caCerts = [ca];
  return conn;
}

/** True when the process looks like it runs in a Pod with a ServiceAccount token. */
export function isInCluster(
  dir = SERVICE_ACCOUNT_DIR,
  env: { get(key: string): string | undefined } = Deno.env,
): boolean {
  if (!env.get("KUBERNETES_SERVICE_HOST") || !env.get("KUBERNETES_SERVICE_PORT")) return false;
  try {
    Deno.statSync(`${dir}/token`);
    return true;
  } catch {
    return false;
  }
}

/** The files of a `$KUBECONFIG`-style list (`a:b`, `;` on Windows), empty entries dropped. */
export function splitKubeconfigList(paths: string): string[] {
  return paths.split(Deno.build.os === "windows" ? ";" : ":").filter((p) => p !== "");
}

function decodeBase64(data: string): string {
  try {
    const bin = atob(data.replace(/\s+/g, ""));
    return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  } catch {
    throw new KubeconfigError("invalid base64 in kubeconfig *-data field");
  }
}

/**
 * `.` and `..` segments resolved (not node:path: a `node:` module costs the process Node's
 * compatibility layer, see the top of this file).
 */
function normalize(path: string): string {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return `/${out.join("/")}`;
}

function absolutePath(path: string, baseDir?: string): string {
  if (path.startsWith("/")) return normalize(path);
  if (path.startsWith("~/")) return normalize(`${homeDir()}${path.slice(1)}`);
  return normalize(`${baseDir ?? Deno.cwd()}/${path}`);
}

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

/** The user's home directory ($HOME), for `~/.kube/config`. */
export function homeDir(): string {
  return Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE") ?? "/";
}
