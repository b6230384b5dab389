/**
 * A thin Kubernetes API client on `fetch`, implementing the verbs of runtime/client/api_client.ts.
 *
 * Thin on purpose: REST paths come from `ResourceType`s, bodies are plain JSON typed with
 * `kubernetes-types`, failures become `ApiError`s carrying the API's Status, and a watch is an
 * async iterable of events. Everything else (caches, retries, relists) lives in the layers above.
 */
import type {
  ApiClient,
  ApplyOptions,
  CallOptions,
  DeleteOptions,
  ListEachOptions,
  ListOptions,
  ObjectList,
  PatchOptions,
  PatchType,
  WatchEvent,
  WatchOptions,
  WriteOptions,
} from "./api_client.ts";
import { Deadlines } from "../core/deadlines.ts";
import { EchoedAnswers, echoResource } from "./echoed_answers.ts";
import { ApiError } from "./errors.ts";
import {
  type ClusterConnection,
  homeDir,
  inClusterConnection,
  isInCluster,
  loadKubeconfig,
  splitKubeconfigList,
} from "../config/kubeconfig.ts";
import { KubeconfigError } from "../config/kubeconfig_error.ts";
import { resourceName, resourcePath, type ResourceType } from "./resources.ts";
import { type Credentials, credentialsOf } from "../config/credentials.ts";
import {
  APPLY_CONTENT_TYPE,
  applyBody,
  callOptions,
  listQuery,
  nameOf,
  namespaceOf,
  PATCH_CONTENT_TYPES,
  queryString,
  withTypeMeta,
  writeQuery,
} from "./rest_requests.ts";
import { ListItemReader } from "./wire/list_items.ts";
import { watchEvents } from "./watch_lines.ts";
import { type Answer, fetchAnswer, http1StreamAnswer, http1WholeAnswer } from "./answer.ts";
import { Http1Client } from "./transport/http1.ts";
import {
  type ApiTransport,
  proxyOf,
  tlsOptionsOf,
  type Transport,
  transportOf,
} from "./transport/choice.ts";
import { impersonationHeaders } from "../config/impersonation.ts";
import {
  describeRequest,
  type RequestEvent,
  resourceNameWithSub,
  type Verb,
} from "./request_labels.ts";
import { WatchConnections } from "./transport/watch_connections.ts";
import type { Slots } from "../pacing/slots.ts";
import type { Priority } from "../pacing/pacing.ts";
import { WritePacing } from "../pacing/write_pacing.ts";
import type { RuntimeLog } from "../core/log.ts";

export type * from "./api_client.ts";
export { LineBuffer, parseWatchLine } from "./watch_lines.ts";

// The contract exposes errors through the client module too.
export * from "./errors.ts";

export type { RequestEvent, Verb } from "./request_labels.ts";

interface ClientOptions {
  /** Sent as User-Agent; the API server logs and audits it. */
  userAgent?: string;
  /** Per-request timeout in ms (not applied to watches); 0 disables. Default 30 s. */
  timeoutMs?: number;
  /** Observer of every request, e.g. to count `api_requests_total{verb,resource,code}`. */
  onRequest?: (event: RequestEvent) => void;
  /** How long a token read from a file is trusted before it is read again. Default 60 s. */
  tokenRefreshMs?: number;
  /**
   * The admission layer writes (every method but GET) pass (runtime/pacing/write_pacing.ts); the
   * manager's carries every pacing mechanism and its metrics.
   */
  pacing?: WritePacing;
  /**
   * Without `pacing`: writes in flight at once, `critical` ones excepted; the rest wait in order
   * of priority (runtime/pacing/slots.ts). 0 or unset: no bound.
   */
  maxWritesInFlight?: number;
  /** How long an exec credential plugin may run before it is killed. Default 30 s. */
  execPluginTimeoutMs?: number;
  /** Where the client reports what no request shows (an exec credential plugin's failed run). */
  log?: RuntimeLog;
  /**
   * How long past its `timeoutSeconds` a watch may stay open before the client closes it as dead
   * (default 60 s): the API server ends each watch at its timeout, so a stream still open then
   * is on a connection that went away without a word (a node or a NAT gone), where a read would
   * wait forever and the cache fed by it would stop.
   */
  watchOverdueMs?: number;
  /** Told of each write answered by its watch echo (echoed_answers.ts), with its resource. */
  onEchoedAnswer?: (resource: string) => void;
  /**
   * How requests travel: "http1", the minimal HTTP/1.1 client (transport/http1.ts, a third of
   * `fetch`'s CPU per request); "fetch", Deno's `fetch` over HTTP/2; "auto" (the default): what
   * the connection needs, else "http1" unless a proxy variable is set (transport/choice.ts).
   */
  transport?: ApiTransport;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  /** Content-Type of the body; defaults to application/json. */
  contentType?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Overrides the client's timeout for this request; 0 disables. */
  timeoutMs?: number;
  /** Labels reported to `onRequest`; inferred from method and path when absent. */
  verb?: Verb;
  resource?: string;
  /** A write's place in the queue for a write slot (runtime/pacing/pacing.ts); default "normal". */
  priority?: Priority;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_TOKEN_REFRESH_MS = 60_000;
/** How long past its timeoutSeconds a watch may stay open (ClientOptions `watchOverdueMs`). */
const DEFAULT_WATCH_OVERDUE_MS = 60_000;

export class KubeClient implements ApiClient {
  /** Base URL of the API server. */
  readonly server: string;
  /** Default namespace of the kubeconfig context or ServiceAccount. */
  readonly namespace: string;
  /** How requests and watches travel (`ClientOptions.transport` as decided by transportOf). */
  readonly transport: Transport;
  readonly #httpClient: Deno.HttpClient;
  /** The HTTP/1.1 client, when requests go through it (`transport`). */
  readonly #http1?: Http1Client;
  /** The server URL's path ("" or a proxy's prefix), which every request path follows. */
  readonly #serverPath: string;
  /** Watches have connections of their own (transport/watch_connections.ts). */
  readonly #watchConnections: WatchConnections;
  readonly #credentials: Credentials;
  /** The Impersonate-* headers of every request (a kubeconfig user's `as`), or none. */
  readonly #impersonation: readonly [string, string][];
  readonly #userAgent: string;
  readonly #timeoutMs: number;
  /** The requests' timeouts, on one timer (runtime/core/deadlines.ts). */
  readonly #deadlines = new Deadlines();
  readonly #onRequest?: (event: RequestEvent) => void;
  readonly #onEchoedAnswer?: (resource: string) => void;
  readonly #log?: RuntimeLog;
  readonly #watchOverdueMs: number;
  /** Watched objects that answer writes in flight (echoed_answers.ts). */
  readonly #echoes = new EchoedAnswers();
  /** The admission layer of the writes (runtime/pacing/write_pacing.ts). */
  readonly pacing: WritePacing;
  #closed = false;

  /** The bound on writes in flight (the pacing layer's), as it is now. */
  get writeSlots(): Slots {
    return this.pacing.slots;
  }

  constructor(conn: ClusterConnection, options: ClientOptions = {}) {
    this.server = conn.server.replace(/\/+$/, "");
    this.#serverPath = new URL(this.server).pathname.replace(/\/+$/, "");
    this.namespace = conn.namespace;
    this.#userAgent = options.userAgent ?? `deno-kube-client (deno/${Deno.version.deno})`;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#onRequest = options.onRequest;
    this.#onEchoedAnswer = options.onEchoedAnswer;
    this.#log = options.log;
    this.#watchOverdueMs = options.watchOverdueMs ?? DEFAULT_WATCH_OVERDUE_MS;
    this.pacing = options.pacing ??
      new WritePacing({ maxWritesInFlight: options.maxWritesInFlight ?? 0 });
    const tls = tlsOptionsOf(conn);
    this.transport = transportOf(conn, options.transport);
    if (this.transport === "http1") {
      this.#http1 = new Http1Client({ server: this.server, tls, serverName: conn.tlsServerName });
    }
    const fetchOptions: Deno.CreateHttpClientOptions = conn.proxyUrl
      ? { ...tls, proxy: proxyOf(conn.proxyUrl) }
      : tls;
    this.#httpClient = Deno.createHttpClient(fetchOptions);
    this.#watchConnections = new WatchConnections(() => Deno.createHttpClient(fetchOptions));

    this.#impersonation = impersonationHeaders(conn.impersonate);
    this.#credentials = credentialsOf(
      conn,
      options.tokenRefreshMs ?? DEFAULT_TOKEN_REFRESH_MS,
      { timeoutMs: options.execPluginTimeoutMs, log: options.log },
    );
  }

  /**
   * The client for wherever the process runs: an explicit kubeconfig file, else the `$KUBECONFIG`
   * list, else the in-cluster ServiceAccount, else `~/.kube/config`.
   */
  static async load(
    opts: { kubeconfig?: string; context?: string } & ClientOptions = {},
  ): Promise<KubeClient> {
    const { kubeconfig, context, ...clientOptions } = opts;
    if (kubeconfig) return await KubeClient.fromKubeconfig(kubeconfig, context, clientOptions);
    const env = Deno.env.get("KUBECONFIG");
    if (env) {
      return await KubeClient.fromKubeconfig(splitKubeconfigList(env), context, clientOptions);
    }
    if (isInCluster()) return await KubeClient.inCluster(clientOptions);
    const home = `${homeDir()}/.kube/config`;
    try {
      await Deno.stat(home);
    } catch {
      throw new KubeconfigError(
        "no Kubernetes configuration: pass --kubeconfig, set $KUBECONFIG, run in a Pod, " +
          `or create ${home}`,
      );
    }
    return await KubeClient.fromKubeconfig(home, context, clientOptions);
  }

  /** A client from one kubeconfig file, or from a list of them merged like `$KUBECONFIG`. */
  static async fromKubeconfig(
    path: string | string[],
    context?: string,
    options?: ClientOptions,
  ): Promise<KubeClient> {
    return new KubeClient(await loadKubeconfig(path, context), options);
  }

  /** A client from the Pod's ServiceAccount; its (rotating) token is re-read from disk. */
  static async inCluster(options?: ClientOptions): Promise<KubeClient> {
    return new KubeClient(await inClusterConnection(), options);
  }

  /** Releases the HTTP connection pool. In-flight watches must be aborted first. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#credentials.stop();
    this.#httpClient.close();
    this.#http1?.close();
    this.#watchConnections.close();
  }

  /**
   * Why requests cannot be authenticated now (an exec credential plugin's last run failed or timed
   * out, and no token it gave is still valid); undefined when nothing is known to be wrong.
   */
  get credentialsProblem(): string | undefined {
    return this.#credentials.problem();
  }

  /**
   * Kills an exec credential plugin's run in progress and runs none again, so that a stopping
   * process never waits on one; requests go on with a token still valid.
   */
  stopCredentialPlugin(): void {
    this.#credentials.stop();
  }

  /**
   * One request; the JSON answer on 2xx, an `ApiError` otherwise. `path` is absolute
   * ("/api/v1/namespaces"); the body is sent as JSON.
   */
  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    opts: RequestOptions = {},
  ): Promise<T> {
    const echo = method === "GET"
      ? undefined
      : echoResource(describeRequest(method, path, opts).resource);
    if (echo === undefined) {
      const text = await this.#exchange(method, path, body, opts);
      return (text === "" ? undefined : JSON.parse(text)) as T;
    }
    this.#echoes.started(echo);
    try {
      const text = await this.#exchange(method, path, body, opts);
      if (text === "") return undefined as T;
      const echoed = this.#echoes.take(echo, text);
      if (echoed === undefined) return JSON.parse(text) as T;
      this.#onEchoedAnswer?.(echo);
      return echoed as T;
    } finally {
      this.#echoes.finished(echo);
    }
  }

  async get<T>(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    opts: CallOptions = {},
  ): Promise<T> {
    return await this.request<T>("GET", resourcePath(rt, { namespace, name }), undefined, {
      ...callOptions(opts),
      verb: "get",
      resource: resourceName(rt),
    });
  }

  /** One page of a list; pass `limit` and then the returned `metadata.continue` to paginate. */
  async list<T>(rt: ResourceType, opts: ListOptions = {}): Promise<ObjectList<T>> {
    return await this.request<ObjectList<T>>(
      "GET",
      resourcePath(rt, { namespace: opts.namespace }),
      undefined,
      { ...callOptions(opts), query: listQuery(opts), verb: "list", resource: resourceName(rt) },
    );
  }

  /**
   * Every object of a list in one request (the apiserver answers a list without `limit` from its
   * watch cache), each parsed and handed to `onItem` as soon as its text has arrived, so neither
   * the body nor the list of untransformed objects is ever held whole. `continue` is followed
   * should the server paginate anyway. The timeout bounds each wait for data: a list of every pod
   * of a large cluster may take longer than it, a stalled one does not.
   */
  async listEach<T>(
    rt: ResourceType,
    onItem: (item: T) => void,
    opts: ListEachOptions = {},
  ): Promise<ObjectList<T>["metadata"]> {
    let meta = await this.#listEachPage(rt, onItem, opts);
    const resourceVersion = meta.resourceVersion;
    while (meta.continue) {
      meta = await this.#listEachPage(rt, onItem, { ...opts, continue: meta.continue });
    }
    return { resourceVersion };
  }

  #listEachPage<T>(
    rt: ResourceType,
    onItem: (item: T) => void,
    opts: ListEachOptions,
  ): Promise<ObjectList<T>["metadata"]> {
    const options: RequestOptions = {
      query: listQuery(opts),
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
      verb: "list",
      resource: resourceName(rt),
    };
    const path = resourcePath(rt, { namespace: opts.namespace });
    return this.#attempt("GET", path, undefined, options, async (answer, signal, rearm) => {
      const items = new ListItemReader({ dropManagedFields: opts.dropManagedFields });
      for await (const chunk of answer.chunks(signal)) {
        rearm();
        for (const item of items.push(chunk)) onItem(JSON.parse(item));
      }
      // An abort ends the chunks quietly: the list did not end.
      signal.throwIfAborted();
      return items.finish().metadata as ObjectList<T>["metadata"];
    }, true);
  }

  /** Every page of a list, following `continue` tokens. */
  async listAll<T>(rt: ResourceType, opts: ListOptions = {}): Promise<ObjectList<T>> {
    const first = await this.list<T>(rt, opts);
    const items = [...first.items];
    let meta = first.metadata;
    while (meta.continue) {
      const page = await this.list<T>(rt, { ...opts, continue: meta.continue });
      items.push(...page.items);
      meta = page.metadata;
    }
    return { ...first, metadata: { resourceVersion: first.metadata.resourceVersion }, items };
  }

  async create<T>(rt: ResourceType, obj: T, opts: WriteOptions = {}): Promise<T> {
    const o = withTypeMeta(rt, obj);
    return await this.request<T>(
      "POST",
      resourcePath(rt, { namespace: namespaceOf(rt, o) }),
      o,
      { ...callOptions(opts), query: writeQuery(opts), verb: "create", resource: resourceName(rt) },
    );
  }

  /** PUT: replaces the object; fails with 409 when `metadata.resourceVersion` is stale. */
  async replace<T>(rt: ResourceType, obj: T, opts: PatchOptions = {}): Promise<T> {
    const o = withTypeMeta(rt, obj);
    return await this.request<T>(
      "PUT",
      resourcePath(rt, {
        namespace: namespaceOf(rt, o),
        name: nameOf(o),
        subresource: opts.subresource,
      }),
      o,
      {
        ...callOptions(opts),
        query: writeQuery(opts),
        verb: "update",
        resource: resourceNameWithSub(rt, opts.subresource),
      },
    );
  }

  async patch<T>(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: PatchType,
    opts: PatchOptions = {},
  ): Promise<T> {
    return await this.request<T>(
      "PATCH",
      resourcePath(rt, { namespace, name, subresource: opts.subresource }),
      patch,
      {
        ...callOptions(opts),
        query: writeQuery(opts),
        contentType: PATCH_CONTENT_TYPES[type],
        verb: "patch",
        resource: resourceNameWithSub(rt, opts.subresource),
      },
    );
  }

  /**
   * Server-side apply: the object states the fields `fieldManager` wants to own; the server
   * merges, tracks ownership and answers with the result. Applying an unchanged object is a no-op
   * (the resourceVersion does not move).
   */
  async apply<T>(rt: ResourceType, obj: T, opts: ApplyOptions): Promise<T> {
    if (!opts.fieldManager) throw new Error("apply needs a fieldManager");
    const o = withTypeMeta(rt, obj);
    return await this.request<T>(
      "PATCH",
      resourcePath(rt, {
        namespace: namespaceOf(rt, o),
        name: nameOf(o),
        subresource: opts.subresource,
      }),
      applyBody(o),
      {
        ...callOptions(opts),
        query: { ...writeQuery(opts), force: opts.force ? true : undefined },
        contentType: APPLY_CONTENT_TYPE,
        verb: "apply",
        resource: resourceNameWithSub(rt, opts.subresource),
      },
    );
  }

  /** Deletes one object; answers the object (while finalizers run) or a Success Status. */
  async delete(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<unknown> {
    const body: Record<string, unknown> = { apiVersion: "v1", kind: "DeleteOptions" };
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
    if (opts.preconditions) body.preconditions = opts.preconditions;
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.dryRun) body.dryRun = ["All"];
    return await this.request<unknown>("DELETE", resourcePath(rt, { namespace, name }), body, {
      ...callOptions(opts),
      verb: "delete",
      resource: resourceName(rt),
    });
  }

  /**
   * Watches a collection from `resourceVersion`. Yields ADDED/MODIFIED/DELETED/BOOKMARK events;
   * an ERROR event is thrown as `ApiError` (410 Expired → relist). The iteration ends when the
   * server closes the stream (e.g. after `timeoutSeconds`) or quietly when `signal` aborts;
   * breaking out of the loop releases the connection.
   */
  async *watch<T>(rt: ResourceType, opts: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    if (opts.signal?.aborted) return;
    const overdue = this.#watchOverdue(rt, opts);
    try {
      yield* this.#watch<T>(rt, { ...opts, signal: overdue?.signal ?? opts.signal });
    } finally {
      overdue?.stop();
    }
  }

  /**
   * A watch asked for a `timeoutSeconds` is closed if still open `watchOverdueMs` after it: the
   * signal to watch with, ended then or with the caller's. (Not AbortSignal.any: the caller's
   * signal lives as long as the process and would hold every watch's.) Silence is no sign of a
   * dead stream: the API server's watch cache sends bookmarks about once a minute only once the
   * kind has moved past the resourceVersion the watch started from, so a watch of a kind nothing
   * changes may get one bookmark and then none for many minutes.
   */
  #watchOverdue(
    rt: ResourceType,
    opts: WatchOptions,
  ): { signal: AbortSignal; stop: () => void } | undefined {
    if (!opts.timeoutSeconds) return undefined;
    const ended = new AbortController();
    const end = () => ended.abort();
    const timeoutSeconds = opts.timeoutSeconds;
    const timer = setTimeout(() => {
      this.#log?.warn("watch still open past its timeoutSeconds: closed, to be resumed", {
        resource: resourceName(rt),
        namespace: opts.namespace ?? "*",
        timeoutSeconds,
      });
      end();
    }, timeoutSeconds * 1000 + this.#watchOverdueMs);
    opts.signal?.addEventListener("abort", end, { once: true });
    return {
      signal: ended.signal,
      stop: () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener("abort", end);
      },
    };
  }

  async *#watch<T>(rt: ResourceType, opts: WatchOptions): AsyncGenerator<WatchEvent<T>> {
    const { signal } = opts;
    const query = {
      ...listQuery(opts),
      watch: true,
      allowWatchBookmarks: opts.allowWatchBookmarks ? true : undefined,
      timeoutSeconds: opts.timeoutSeconds,
    };
    // Over HTTP/1.1 each watch has a connection of its own; over HTTP/2 a stream of a pooled one.
    const connection = this.#http1 ? undefined : this.#watchConnections.acquire();
    let answer: Answer;
    try {
      answer = await this.#send(
        "GET",
        resourcePath(rt, { namespace: opts.namespace }),
        {
          query,
          signal,
          timeoutMs: 0,
          verb: "watch",
          resource: resourceName(rt),
        },
        undefined,
        { streaming: true, client: connection?.client },
      );
    } catch (e) {
      connection?.release();
      if (signal?.aborted) return;
      throw e;
    }
    if (!answer.ok) {
      connection?.release();
      const text = await answer.text();
      throw ApiError.fromResponse(answer.status, text, `watch ${resourceName(rt)}`);
    }
    try {
      const resource = resourceName(rt);
      yield* watchEvents<T>(answer.chunks(signal), rt, {
        dropManagedFields: opts.dropManagedFields,
        parsed: (text, object) => this.#echoes.watched(resource, text, object),
      });
    } finally {
      connection?.release();
    }
  }

  /** Sends and reads the whole body; a write is admitted by the pacing layer first. */
  async #exchange(
    method: string,
    path: string,
    body: unknown,
    opts: RequestOptions,
  ): Promise<string> {
    const release = method === "GET"
      ? undefined
      : await this.pacing.admit(opts.priority, opts.signal);
    try {
      return await this.#attempt(method, path, body, opts, (response) => response.text());
    } finally {
      release?.();
    }
  }

  /**
   * Sends one request and reads a successful response with `read`. The timeout bounds each wait:
   * `read` calls `rearm` whenever data arrives, and an abort by the timeout is thrown as the
   * timeout's reason. A 401 is retried once if the credentials can be read again (a rotated
   * ServiceAccount token is read now rather than at the next refresh); any other failure is an
   * `ApiError` with the server's text.
   */
  async #attempt<R>(
    method: string,
    path: string,
    body: unknown,
    opts: RequestOptions,
    read: (answer: Answer, signal: AbortSignal, rearm: () => void) => Promise<R>,
    streaming = false,
    retried = false,
  ): Promise<R> {
    const timeoutMs = opts.timeoutMs ?? this.#timeoutMs;
    const timeout = new AbortController();
    const deadline = timeoutMs > 0
      ? this.#deadlines.start(timeoutMs, () => {
        timeout.abort(
          new DOMException(`${method} ${path}: no data for ${timeoutMs} ms`, "TimeoutError"),
        );
      })
      : undefined;
    const rearm = () => deadline?.extend();
    const disarm = () => deadline?.cancel();
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout.signal]) : timeout.signal;
    try {
      const answer = await this.#send(method, path, { ...opts, signal }, body, { streaming });
      if (!answer.ok) {
        const text = await answer.text();
        if (answer.status === 401 && !retried && this.#credentials.invalidate()) {
          disarm();
          return await this.#attempt(method, path, body, opts, read, streaming, true);
        }
        throw ApiError.fromResponse(answer.status, text, `${method} ${path}`);
      }
      return await read(answer, signal, rearm);
    } catch (e) {
      if (timeout.signal.aborted && !(e instanceof ApiError)) throw timeout.signal.reason;
      throw e;
    } finally {
      disarm();
    }
  }

  /**
   * Sends one request and reports it once the answer's headers (or a failure) arrive; over
   * HTTP/1.1 a non-`streaming` answer is read whole first. `client` is the `fetch` connection pool
   * to use (a watch's).
   */
  async #send(
    method: string,
    path: string,
    opts: RequestOptions,
    body?: unknown,
    how: { streaming?: boolean; client?: Deno.HttpClient } = {},
  ): Promise<Answer> {
    if (this.#closed) throw new Error("KubeClient is closed");
    const headers: [string, string][] = [
      ["Accept", "application/json"],
      ["User-Agent", this.#userAgent],
    ];
    const auth = await this.#credentials.header(opts.signal);
    if (auth) headers.push(["Authorization", auth]);
    headers.push(...this.#impersonation);
    let payload: string | undefined;
    if (body !== undefined) {
      headers.push(["Content-Type", opts.contentType ?? "application/json"]);
      payload = typeof body === "string" ? body : JSON.stringify(body);
    }
    for (const [name, value] of Object.entries(opts.headers ?? {})) {
      const lower = name.toLowerCase();
      const at = headers.findIndex(([h]) => h.toLowerCase() === lower);
      if (at >= 0) headers.splice(at, 1);
      headers.push([name, value]);
    }
    const target = path + queryString(opts.query);
    const label = describeRequest(method, path, {
      ...opts,
      apply: opts.contentType === APPLY_CONTENT_TYPE,
    });
    const start = performance.now();
    let code = 0;
    try {
      let answer: Answer;
      if (this.#http1) {
        const req = {
          method,
          path: this.#serverPath + target,
          headers,
          body: payload,
          signal: opts.signal,
        };
        answer = how.streaming
          ? http1StreamAnswer(await this.#http1.stream(req))
          : http1WholeAnswer(await this.#http1.request(req));
      } else {
        answer = fetchAnswer(
          await fetch(this.server + target, {
            method,
            headers,
            body: payload,
            signal: opts.signal,
            client: how.client ?? this.#httpClient,
          }),
        );
      }
      code = answer.status;
      return answer;
    } finally {
      try {
        this.#onRequest?.({ ...label, code, seconds: (performance.now() - start) / 1000 });
      } catch {
        // An observer must never fail the request it observes.
      }
    }
  }
}
