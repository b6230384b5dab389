/**
 * The Authorization header of a connection: a fixed bearer token, a token file (a
 * ServiceAccount's, re-read as the kubelet rotates it), an exec plugin's token, basic auth, or none
 * (client certificates).
 */
import { ExecTokenSource, type ExecTokenSourceOptions } from "./exec_credentials.ts";
import type { ClusterConnection } from "./kubeconfig.ts";
import { KubeconfigError } from "./kubeconfig_error.ts";

export interface Credentials {
  /**
   * The header value, or undefined when the connection authenticates otherwise. `signal` ends the
   * wait (an exec plugin's run goes on for the other callers).
   */
  header(signal?: AbortSignal): Promise<string | undefined>;
  /** Forgets a cached file token (after a 401); false when there is nothing to read again. */
  invalidate(): boolean;
  /** Why no credentials can be had now (an exec plugin's last run failed); undefined: fine. */
  problem(): string | undefined;
  /** Kills an exec plugin's run and runs it no more (the process is stopping). */
  stop(): void;
}

export function credentialsOf(
  conn: ClusterConnection,
  tokenRefreshMs: number,
  exec: ExecTokenSourceOptions = {},
): Credentials {
  const fixed = (header?: string): Credentials => ({
    header: () => Promise.resolve(header),
    invalidate: () => false,
    problem: () => undefined,
    stop: () => {},
  });
  if (conn.token) return fixed(`Bearer ${conn.token}`);
  if (conn.tokenFile) {
    const source = new FileTokenSource(conn.tokenFile, tokenRefreshMs);
    return {
      header: async () => `Bearer ${await source.token()}`,
      invalidate: () => {
        source.invalidate();
        return true;
      },
      problem: () => undefined,
      stop: () => {},
    };
  }
  if (conn.exec) {
    const source = new ExecTokenSource(conn.exec, undefined, undefined, exec);
    return {
      header: async (signal) => `Bearer ${await source.token(signal)}`,
      invalidate: () => {
        source.invalidate();
        return true;
      },
      problem: () => source.problem,
      stop: () => source.stop(),
    };
  }
  if (conn.basicAuth) {
    return fixed(`Basic ${btoa(`${conn.basicAuth.username}:${conn.basicAuth.password}`)}`);
  }
  return fixed(undefined);
}

/**
 * Re-reads a bearer token file when the cached copy is older than `refreshMs`: bound
 * ServiceAccount tokens are rotated on disk by the kubelet and expire about an hour later.
 */
class FileTokenSource {
  #value?: string;
  #readAt = -Infinity;
  constructor(readonly path: string, readonly refreshMs: number) {}

  async token(): Promise<string> {
    if (this.#value !== undefined && performance.now() - this.#readAt < this.refreshMs) {
      return this.#value;
    }
    try {
      const value = (await Deno.readTextFile(this.path)).trim();
      if (value === "") throw new Error("empty token file");
      this.#value = value;
      this.#readAt = performance.now();
    } catch (e) {
      // Keep using the last good token (the file may be mid-rotation); fail only without one.
      if (this.#value === undefined) {
        throw new KubeconfigError(`cannot read token file ${this.path}: ${(e as Error).message}`);
      }
    }
    return this.#value;
  }

  invalidate(): void {
    this.#readAt = -Infinity;
  }
}
