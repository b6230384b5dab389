/**
 * Bearer tokens from a kubeconfig's exec credential plugin (`client.authentication.k8s.io/v1`, and
 * `v1beta1`): how EKS (`aws eks get-token`), GKE (`gke-gcloud-auth-plugin`), AKS and OIDC
 * (`kubelogin`) clusters hand out credentials. The plugin runs with the kubeconfig's args and env
 * plus KUBERNETES_EXEC_INFO; its ExecCredential is cached until its `expirationTimestamp` (a
 * plugin without one runs once), and run again after a 401.
 *
 * A run is bounded (default 30 s; client-go waits forever, which suits a person at a terminal, not
 * an operator): a plugin still running then is killed and the failure logged, and `problem` says
 * why no token can be had until a run succeeds (the manager's readiness reads it). `stop()` kills a
 * run at once, so a stopping process never waits on a plugin.
 *
 * The operator never has a terminal: a plugin that must talk to the user (`interactiveMode:
 * Always`) is refused, one that may (`IfAvailable`) is told it cannot. Plugins that return a client
 * certificate instead of a token are refused (the HTTP client's certificate is fixed at start).
 * Running a program needs Deno's `--allow-run`, which `deno task dev` grants and the operator's
 * image does not: a kubeconfig with a plugin belongs on a developer's machine.
 */
import { type Clock, systemClock, type TimerId } from "../core/clock.ts";
import { KubeconfigError } from "./kubeconfig_error.ts";
import { type RuntimeLog, silentLog } from "../core/log.ts";

export const EXEC_API_VERSIONS = [
  "client.authentication.k8s.io/v1",
  "client.authentication.k8s.io/v1beta1",
] as const;

/** A kubeconfig user's `exec` stanza, resolved (the command's path, the cluster it is for). */
export interface ExecConfig {
  apiVersion: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  interactiveMode: "Never" | "IfAvailable" | "Always";
  installHint?: string;
  /** Given to the plugin in KUBERNETES_EXEC_INFO when the kubeconfig sets provideClusterInfo. */
  cluster?: {
    server: string;
    "certificate-authority-data"?: string;
    "insecure-skip-tls-verify"?: boolean;
    "tls-server-name"?: string;
    "proxy-url"?: string;
  };
  /** The kubeconfig user, for messages. */
  user: string;
}

/** What the plugin printed, as far as it matters here. */
export interface ExecCredentialStatus {
  token: string;
  /** Milliseconds since the epoch; undefined: valid until a 401 says otherwise. */
  expiresAt?: number;
}

/** KUBERNETES_EXEC_INFO: what the plugin is told about this call. */
export function execInfo(config: ExecConfig): string {
  return JSON.stringify({
    apiVersion: config.apiVersion,
    kind: "ExecCredential",
    spec: {
      interactive: false,
      ...(config.cluster ? { cluster: config.cluster } : {}),
    },
  });
}

/** Parses the plugin's stdout; throws with what is wrong with it. */
export function parseExecCredential(config: ExecConfig, stdout: string): ExecCredentialStatus {
  const where = `exec plugin ${config.command} (user "${config.user}")`;
  let cred: {
    apiVersion?: string;
    kind?: string;
    status?: {
      token?: string;
      expirationTimestamp?: string;
      clientCertificateData?: string;
    };
  };
  try {
    cred = JSON.parse(stdout);
  } catch (e) {
    throw new KubeconfigError(`${where}: its output is not JSON: ${(e as Error).message}`);
  }
  if (cred.kind !== "ExecCredential") {
    throw new KubeconfigError(`${where}: printed kind ${cred.kind}, not ExecCredential`);
  }
  if (cred.apiVersion !== config.apiVersion) {
    throw new KubeconfigError(
      `${where}: printed apiVersion ${cred.apiVersion}, the kubeconfig asks for ${config.apiVersion}`,
    );
  }
  const status = cred.status ?? {};
  if (!status.token) {
    throw new KubeconfigError(
      status.clientCertificateData
        ? `${where}: returned a client certificate; only token credentials are supported`
        : `${where}: returned no token`,
    );
  }
  let expiresAt: number | undefined;
  if (status.expirationTimestamp) {
    expiresAt = Date.parse(status.expirationTimestamp);
    if (Number.isNaN(expiresAt)) {
      throw new KubeconfigError(
        `${where}: expirationTimestamp ${status.expirationTimestamp} is not a time`,
      );
    }
  }
  return { token: status.token, expiresAt };
}

/**
 * Runs the plugin, killing it when `signal` aborts (then rejects with the reason); the seam tests
 * replace.
 */
export type RunPlugin = (
  config: ExecConfig,
  signal: AbortSignal,
) => Promise<{ code: number; stdout: string; stderr: string }>;

const runPlugin: RunPlugin = async (config, signal) => {
  let out: Deno.CommandOutput;
  try {
    const child = new Deno.Command(config.command, {
      args: config.args,
      env: { ...config.env, KUBERNETES_EXEC_INFO: execInfo(config) },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const output = child.output();
    // Rejected on abort without waiting for the output: a child the plugin started may still hold
    // its pipes open after the plugin itself is killed.
    const killed = new Promise<never>((_, reject) => {
      const onAbort = () => {
        try {
          child.kill("SIGKILL");
        } catch {
          // exited meanwhile
        }
        reject(signal.reason);
      };
      if (signal.aborted) onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      output.catch(() => {}).finally(() => signal.removeEventListener("abort", onAbort));
    });
    out = await Promise.race([output, killed]);
  } catch (e) {
    if (signal.aborted) throw signal.reason;
    const hint = config.installHint ? `\n${config.installHint}` : "";
    if (e instanceof Deno.errors.NotFound) {
      throw new KubeconfigError(
        `exec plugin ${config.command} (user "${config.user}") not found${hint}`,
      );
    }
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) {
      throw new KubeconfigError(
        `exec plugin ${config.command} (user "${config.user}"): running programs is not ` +
          `allowed (deno --allow-run; \`deno task dev\` grants it, the operator's image does not)`,
      );
    }
    throw e;
  }
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
};

/** Refresh this long before the plugin's stated expiry (a request in flight must not outlive it). */
const EXPIRY_MARGIN_MS = 10_000;

/** How long a plugin may run before it is killed. */
const EXEC_PLUGIN_TIMEOUT_MS = 30_000;

export interface ExecTokenSourceOptions {
  /** Kill a run after this long; default EXEC_PLUGIN_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Where a failed run is reported (with the command and the timeout). */
  log?: RuntimeLog;
  /** Times the run; default the system clock (tests pass a fake one). */
  clock?: Clock;
}

/** Tokens of one plugin: cached, shared by concurrent callers, renewed when expired or refused. */
export class ExecTokenSource {
  #cached?: ExecCredentialStatus;
  #running?: Promise<ExecCredentialStatus>;
  #problem?: string;
  readonly #run: RunPlugin;
  readonly #now: () => number;
  readonly #timeoutMs: number;
  readonly #log: RuntimeLog;
  readonly #clock: Clock;
  readonly #stop = new AbortController();

  constructor(
    readonly config: ExecConfig,
    run: RunPlugin = runPlugin,
    now = Date.now,
    opts: ExecTokenSourceOptions = {},
  ) {
    if (config.interactiveMode === "Always") {
      throw new KubeconfigError(
        `exec plugin ${config.command} (user "${config.user}") needs an interactive terminal ` +
          "(interactiveMode: Always), which the operator never has",
      );
    }
    this.#run = run;
    this.#now = now;
    this.#timeoutMs = opts.timeoutMs ?? EXEC_PLUGIN_TIMEOUT_MS;
    this.#log = opts.log ?? silentLog;
    this.#clock = opts.clock ?? systemClock;
  }

  /**
   * A valid token, from the cache or a run of the plugin (shared by concurrent callers). `signal`
   * ends this caller's wait, not the run the others share.
   */
  async token(signal?: AbortSignal): Promise<string> {
    const c = this.#cached;
    if (c && (c.expiresAt === undefined || c.expiresAt - EXPIRY_MARGIN_MS > this.#now())) {
      return c.token;
    }
    this.#running ??= this.#fetch().finally(() => this.#running = undefined);
    return (await untilAborted(this.#running, signal)).token;
  }

  /** Why no token can be had (the last run failed, nothing valid is cached); undefined: fine. */
  get problem(): string | undefined {
    return this.#problem;
  }

  /** Kills a run in progress and runs the plugin no more (the process is stopping). */
  stop(): void {
    this.#stop.abort(
      new KubeconfigError(
        `exec plugin ${this.config.command} (user "${this.config.user}"): the client is closing`,
      ),
    );
  }

  /** After a 401: the next request runs the plugin again. */
  invalidate(): void {
    this.#cached = undefined;
  }

  async #fetch(): Promise<ExecCredentialStatus> {
    const { command, user } = this.config;
    const timeout = new AbortController();
    // The clock bounds a timer's delay to about 24.8 days (a longer one would fire at once), so a
    // longer timeout is reached by setting the timer again until the deadline has passed.
    const deadline = this.#clock.now() + this.#timeoutMs;
    let timer: TimerId | undefined;
    const untilDeadline = () => {
      timer = this.#clock.setTimeout(() => {
        if (this.#clock.now() < deadline) return untilDeadline();
        timeout.abort(
          new KubeconfigError(
            `exec plugin ${command} (user "${user}") did not finish in ${
              this.#timeoutMs / 1000
            } s; killed`,
          ),
        );
      }, deadline - this.#clock.now());
    };
    untilDeadline();
    try {
      this.#stop.signal.throwIfAborted();
      const out = await this.#run(
        this.config,
        AbortSignal.any([this.#stop.signal, timeout.signal]),
      );
      if (out.code !== 0) {
        const stderr = out.stderr.trim();
        throw new KubeconfigError(
          `exec plugin ${command} (user "${user}") exited with ${out.code}` +
            (stderr ? `: ${stderr}` : ""),
        );
      }
      this.#cached = parseExecCredential(this.config, out.stdout);
      this.#problem = undefined;
      return this.#cached;
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      if (!this.#stop.signal.aborted) {
        this.#problem = error;
        this.#log.error("exec credential plugin failed", {
          command,
          user,
          timeoutMs: this.#timeoutMs,
          error,
        });
      }
      throw e;
    } finally {
      if (timer !== undefined) this.#clock.clearTimeout(timer);
    }
  }
}

/** `p`, or its rejection with `signal`'s reason as soon as that aborts. */
function untilAborted<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
