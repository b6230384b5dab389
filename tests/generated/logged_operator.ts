/**
 * The MiniCluster operator run in-process exactly as mod.ts's `createOperator` wires it (a Manager
 * with the MiniCluster controller, no leader election), scoped to one test namespace, with every
 * log record captured at debug level. The suites that judge the operator by what it says (secrets
 * hygiene) or by whether it fell over (bad input, generated input) read the records from here.
 *
 * "Crash" means what would take a real process down or leave a MiniCluster unreconciled: the
 * manager's `run()` ending on its own, an unhandled rejection, a reconcile that threw anything but
 * a transient API error (409 conflict, 429, 5xx, a reset connection), or a mapper that threw.
 */
import { Manager } from "../../runtime/manager.ts";
import { Logger } from "../../runtime/core/log.ts";
import { controllerSettings, parseOptions } from "../../controllers/minicluster/operator_flags.ts";
import {
  miniClusterController,
  miniClusterStores,
} from "../../controllers/minicluster/controller.ts";
import type { TestEnv } from "../harness.ts";

export interface LogRecord {
  level: string;
  msg: string;
  [field: string]: unknown;
}

export interface LoggedOperator {
  /** Every log line as written (JSON), in order. */
  readonly lines: string[];
  records(): LogRecord[];
  /** Records that count as a crash (see the module comment). */
  crashes(): LogRecord[];
  /** Resolves when the manager's caches have synced and its controller runs. */
  started: Promise<void>;
  /** Stops the manager (as SIGTERM would) and resolves its exit code. */
  stop(): Promise<number>;
  /** Whether `run()` ended before `stop()` was called. */
  readonly exitedEarly: boolean;
}

/** A transient API failure the controller is right to retry (not a bug of the operator). */
const TRANSIENT = /(^|\s)(409|429|500|502|503|504)\s|connection (reset|closed|refused)|ECONNRESET/i;

function isCrash(r: LogRecord): boolean {
  if (r.msg === "unhandled rejection" || r.msg === "mapper failed") return true;
  if (r.msg === "reconcile failed; not retrying") return true;
  if (r.msg === "reconcile failed; retrying") return !TRANSIENT.test(String(r.error ?? ""));
  return false;
}

async function startLoggedOperator(env: TestEnv): Promise<LoggedOperator> {
  const lines: string[] = [];
  const log = new Logger({ level: "debug", format: "json", write: (line) => lines.push(line) });
  const opts = parseOptions([
    `--kubeconfig=${env.kubeconfig}`,
    `--namespaces=${env.namespace}`,
    "--leader-elect=false",
    "--health-port=0",
    "--bind-address=127.0.0.1",
    "--log-level=debug",
    "--concurrency=4",
  ], {});
  const manager = new Manager(opts, log);
  const client = await manager.connect();
  const stores = miniClusterStores((rt, spec) => manager.watch(rt, spec));
  manager.addController(
    miniClusterController(client, stores, {
      log: manager.log.child({ controller: "minicluster" }),
      instance: "in-process-test",
      cleanupPollMs: 300,
      ...manager.controllerPacing,
      ...controllerSettings(opts),
    }),
  );
  const abort = new AbortController();
  let stopped = false;
  let exitedEarly = false;
  const running = manager.run(abort.signal).then((code) => {
    if (!stopped) exitedEarly = true;
    return code;
  });
  const records = () => lines.map((l) => JSON.parse(l) as LogRecord);
  const started = (async () => {
    const deadline = Date.now() + 30_000;
    while (!records().some((r) => r.msg === "controller started")) {
      if (exitedEarly) throw new Error(`the operator exited early:\n${lines.join("\n")}`);
      if (Date.now() > deadline) throw new Error("the operator did not start in 30 s");
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    lines,
    records,
    crashes: () => records().filter(isCrash),
    started,
    get exitedEarly() {
      return exitedEarly;
    },
    async stop() {
      stopped = true;
      abort.abort();
      return await running;
    },
  };
}

/** Runs `fn` with a logged operator and always stops it. */
export async function withLoggedOperator<T>(
  env: TestEnv,
  fn: (op: LoggedOperator) => Promise<T>,
): Promise<T> {
  const op = await startLoggedOperator(env);
  try {
    await op.started;
    return await fn(op);
  } finally {
    await op.stop();
  }
}
