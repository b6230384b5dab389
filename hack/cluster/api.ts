// Just enough HTTPS to the apiserver for bringing a cluster up: readiness probes and creating
// a few objects. The cluster tool stays independent of runtime/ so it works (and can be
// debugged) even while the operator's own client is broken.

interface Credentials {
  caCert: string;
  clientCert: string;
  clientKey: string;
}

export class ApiConnection {
  #client: Deno.HttpClient;
  constructor(readonly baseUrl: string, creds: Credentials) {
    this.#client = Deno.createHttpClient({
      caCerts: [creds.caCert],
      cert: creds.clientCert,
      key: creds.clientKey,
    });
  }

  async request(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: string }> {
    const res = await fetch(this.baseUrl + path, {
      method,
      client: this.#client,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: await res.text() };
  }

  /** True when GET `path` answers 200 (e.g. "/readyz"); false on any error. */
  async ok(path: string): Promise<boolean> {
    try {
      return (await this.request("GET", path)).status === 200;
    } catch {
      return false;
    }
  }

  /**
   * Creates the object unless it already exists. Asked first: creating some existing objects
   * fails validation before the name is checked (a Service's fixed cluster IP is "already
   * allocated", a 422, not a 409).
   */
  async ensure(collectionPath: string, obj: { metadata?: { name?: string } }): Promise<void> {
    const name = obj.metadata?.name;
    if (name && (await this.request("GET", `${collectionPath}/${name}`)).status === 200) return;
    const res = await this.request("POST", collectionPath, obj);
    if (res.status !== 201 && res.status !== 409) {
      throw new Error(`POST ${collectionPath}: ${res.status} ${res.body}`);
    }
  }

  async getJson<T>(path: string): Promise<T | undefined> {
    const res = await this.request("GET", path);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.body}`);
    return JSON.parse(res.body) as T;
  }

  close(): void {
    this.#client.close();
  }
}

/** Polls `check` every `intervalMs` until it is true; throws `describe()` after `timeoutMs`. */
export async function waitFor(
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; intervalMs?: number; describe: () => string | Promise<string> },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(await opts.describe());
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
  }
}
