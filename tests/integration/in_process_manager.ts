/**
 * The operator's manager run in-process from its flags, with the MiniCluster controller wired as
 * mod.ts wires it: for tests that need what only the manager does (leader election, namespaced
 * watches, /readyz, its metrics) under a kubeconfig of their own. Its log is kept, at debug level;
 * its health server listens on a free port of 127.0.0.1.
 */
import assert from "node:assert/strict";
import { Manager, miniClusterController, miniClusterStores } from "../../mod.ts";
import { Logger } from "../../runtime/core/log.ts";
import { controllerFlags, parseOptions } from "../../controllers/minicluster/operator_flags.ts";
import { eventually } from "../harness.ts";

export interface RunningManager {
  manager: Manager;
  /** Every log line as written (JSON), in order. */
  logs: string[];
  /** Resolves to the exit code once the manager stopped. */
  exit: Promise<number>;
  running(): boolean;
  /** GET /readyz's status code. */
  readyz(): Promise<number>;
  /** The lines of the manager's metrics, as /metrics serves them. */
  metrics(): string[];
  /** Stops the manager (as SIGTERM would) and resolves its exit code. */
  stop(): Promise<number>;
}

/** Runs the manager with `flags` besides the kubeconfig's (and `env`, the environment it reads). */
export async function runManager(
  kubeconfig: string,
  flags: readonly string[],
  env: Record<string, string> = {},
): Promise<RunningManager> {
  const opts = parseOptions([
    `--kubeconfig=${kubeconfig}`,
    "--health-port=0",
    "--bind-address=127.0.0.1",
    ...flags,
  ], env);
  const logs: string[] = [];
  const manager = new Manager(opts, new Logger({ level: "debug", write: (l) => logs.push(l) }));
  const client = await manager.connect();
  const stores = miniClusterStores((rt, spec) => manager.watch(rt, spec));
  manager.addController(
    miniClusterController(client, stores, {
      log: manager.log.child({ controller: "minicluster" }),
      instance: opts.leaderElectionIdentity,
      ...controllerFlags(opts),
      metrics: manager.registry,
    }),
  );
  const abort = new AbortController();
  let done = false;
  const exit = manager.run(abort.signal).finally(() => done = true);
  const port = async () => {
    const line = await eventually(() => {
      const l = logs.find((l) => l.includes("serving /healthz"));
      assert.ok(l, "the health server's log line");
      return l;
    }, { timeoutMs: 10_000, intervalMs: 50 });
    return Number(JSON.parse(line).address.split(":").pop());
  };
  return {
    manager,
    logs,
    exit,
    running: () => !done,
    async readyz() {
      const response = await fetch(`http://127.0.0.1:${await port()}/readyz`);
      await response.body?.cancel();
      return response.status;
    },
    metrics: () => manager.registry.render().split("\n"),
    stop: () => {
      abort.abort();
      return exit;
    },
  };
}
