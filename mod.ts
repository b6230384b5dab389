/**
 * The MiniCluster Operator: flags → manager (client, caches, the MiniCluster controller, leader
 * election, /healthz /readyz /metrics) → run until SIGTERM.
 *
 *   deno run --allow-net --allow-read --allow-env --allow-sys=hostname mod.ts --help
 *   deno run --allow-read --allow-env mod.ts render -f mc.yaml   a MiniCluster's children, as YAML
 *
 * As a library, this module exports the pieces an embedding program or a test needs: the API types
 * and defaulting, the reconciler and its wiring, and the runtime's manager and options.
 */
import { Manager } from "./runtime/manager.ts";
import { BURST_PER_SECOND } from "./runtime/pacing/burst_yield.ts";
import { helpText, OptionsError } from "./runtime/options.ts";
import {
  controllerSettings,
  FLAGS,
  type OperatorOptions,
  parseOptions,
  PROGRAM,
} from "./controllers/minicluster/operator_flags.ts";
import { miniClusterController, miniClusterStores } from "./controllers/minicluster/controller.ts";
import { FluxQueuePoller } from "./controllers/minicluster/fluxqueue/poller.ts";

export type {
  DefaultedMiniCluster,
  MiniCluster,
  MiniClusterSpec,
  MiniClusterStatus,
} from "./api/mod.ts";
export { validateSpec, withDefaults } from "./api/mod.ts";
export {
  CONTROLLER_NAME,
  MANAGED_SELECTOR,
  miniClusterController,
  miniClusterStores,
} from "./controllers/minicluster/controller.ts";
export { MiniClusterReconciler } from "./controllers/minicluster/reconciler.ts";
export type {
  MiniClusterReconcilerOptions,
  MiniClusterStores,
} from "./controllers/minicluster/reconciler.ts";
export { FIELD_MANAGER, FINALIZER } from "./controllers/minicluster/children/names.ts";
export { Manager } from "./runtime/manager.ts";
export { helpText } from "./runtime/options.ts";
export { FLAGS, parseOptions } from "./controllers/minicluster/operator_flags.ts";
export type { OperatorOptions } from "./controllers/minicluster/operator_flags.ts";
export { KubeClient } from "./runtime/client/client.ts";

/** What the operator does, as --help says it, with the one command it has besides running. */
const SUMMARY =
  "Reconciles MiniClusters (flux-framework.org/v1alpha2) into Flux Framework clusters.\n" +
  `\`${PROGRAM} render -f FILE\` prints instead, as YAML, the children it would create\n` +
  "for the MiniClusters of FILE, and exits (render --help: its flags).";

/** A manager with the MiniCluster controller registered, ready to `run()`. */
export async function createOperator(opts: OperatorOptions): Promise<Manager> {
  const manager = new Manager({ ...opts, userAgent: `${PROGRAM} (deno/${Deno.version.deno})` });
  const client = await manager.connect();
  const stores = miniClusterStores((rt, spec) => manager.watch(rt, spec));
  // New MiniClusters are the user's creates: their burst is what the writes give way to.
  manager.pacing.yieldToBursts(stores.miniClusters, {
    during: opts.writesInFlightDuringBursts,
    burstPerSecond: BURST_PER_SECOND,
  });
  // Reads the lead brokers' queue reporters (spec.flux.queueReport) on its own timers, and wakes a
  // MiniCluster's reconcile when what its status would show of its queue changed.
  const fluxQueue = new FluxQueuePoller({
    metrics: manager.registry,
    log: manager.log.child({ component: "flux-queue" }),
  });
  const controller = manager.addController(
    miniClusterController(client, stores, {
      log: manager.log.child({ controller: "minicluster" }),
      instance: opts.leaderElectionIdentity,
      metrics: manager.registry,
      fluxQueue,
      ...manager.controllerPacing,
      ...controllerSettings(opts),
    }),
  );
  fluxQueue.wake = (key) => controller.queue.add(key);
  if (opts.customMetricsPort > 0) {
    // Loaded only when on: it brings the X.509 library (docs/development.md, dependencies).
    const { startCustomMetricsApi } = await import(
      "./controllers/minicluster/custom_metrics_api.ts"
    );
    manager.addServer("custom-metrics", (c) =>
      startCustomMetricsApi(c, {
        port: opts.customMetricsPort,
        hostname: opts.bindAddress,
        service: opts.customMetricsService,
        miniClusters: stores.miniClusters,
        log: manager.log.child({ component: "custom-metrics" }),
      }));
  }
  return manager;
}

/** Entry point: exit code 0 after a clean shutdown, 1 on a fatal error, 2 on bad flags. */
export async function main(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  if (args[0] === "render") {
    const { renderCommand } = await import("./controllers/minicluster/render/render_command.ts");
    return await renderCommand(args.slice(1));
  }
  let opts: OperatorOptions;
  try {
    opts = parseOptions(args, env);
  } catch (e) {
    if (!(e instanceof OptionsError)) throw e;
    console.error(`${PROGRAM}: ${e.message}`);
    return 2;
  }
  if (opts.help) {
    console.log(helpText(PROGRAM, SUMMARY, FLAGS));
    return 0;
  }
  try {
    const manager = await createOperator(opts);
    return await manager.run();
  } catch (e) {
    console.error(`${PROGRAM}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args, Deno.env.toObject()));
