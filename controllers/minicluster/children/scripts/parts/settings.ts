/**
 * Everything the entrypoint scripts need, resolved once from a MiniCluster with the API defaults
 * applied, so the script templates never deal with missing fields. This is also where the
 * Go operator's derived values live: the hostlist, the quorum and the main host.
 */
import type { ContainerInput, MiniClusterInput } from "./input.ts";
import { BROKER_PORT, headlessServiceName, podHostname } from "../../names.ts";
import { mountsViewImage, type Sizing } from "../../sizing.ts";

const DEFAULT_FLUX_VIEW_NAME = "flux-view";
export const DEFAULT_MOUNT_PATH = "/mnt/flux";
const DEFAULT_QUEUE_POLICY = "fcfs";
const DEFAULT_LOG_LEVEL = 6;
const DEFAULT_CONNECT_TIMEOUT = "5s";
/** Where the Flux view images keep the view (flux-framework/flux-views convention). */
export const VIEW_SOURCE_ROOT = "/opt/view";

export interface Settings {
  name: string;
  namespace: string;
  headlessName: string;
  /** `<name>-0`, the hostname of the lead broker (Job index 0). */
  mainHost: string;
  /** What the brokers are started for (sizing.ts). */
  sizing: Sizing;
  tasks: number;
  /** `-Sbroker.quorum` value, or undefined for Flux's default (all ranks). */
  quorum: number | undefined;
  hostlist: string;
  interactive: boolean;
  logging: { quiet: boolean; strict: boolean; debug: boolean; zeromq: boolean; timed: boolean };
  archivePath: string;
  /**
   * The Flux view: `mounted` when the pods mount the view image (no init container: the Flux
   * container writes the configuration itself; sizing.ts mountsViewImage).
   */
  view: {
    name: string;
    mountPath: string;
    disable: boolean;
    pythonPath: string;
    mounted: boolean;
    image: string;
  };
  flux: {
    submitCommand: string;
    wrap: string;
    connectTimeout: string;
    optionFlags: string;
    disableSocket: boolean;
    topology: string;
    noWaitSocket: boolean;
    completeWorkers: boolean;
    /** Removed followers drain first, for at most this long (drain.ts); undefined: no drain. */
    drainGracePeriodSeconds: number | undefined;
    logLevel: number;
    schedulerSimple: boolean;
    queuePolicy: string;
    brokerConfig: string;
    environment: [string, string][];
    leadBroker: { address: string; name: string; size: number; port: number } | undefined;
  };
  containers: ContainerInput[];
  /** `spec.flux.queueReport` with its defaults: the lead broker runs the queue reporter. */
  queueReport: { port: number; intervalSeconds: number } | undefined;
}

/** A spec the CRD accepted but the entrypoint cannot be built from. */
export class EntrypointSpecError extends Error {
  override name = "EntrypointSpecError";
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function resolveSettings(mc: MiniClusterInput, sizing: Sizing): Settings {
  const name = mc.metadata?.name;
  if (!name) throw new EntrypointSpecError("MiniCluster has no metadata.name");
  const namespace = mc.metadata?.namespace;
  if (!namespace) throw new EntrypointSpecError("MiniCluster has no metadata.namespace");
  const spec = mc.spec ?? {};
  const flux = spec.flux ?? {};
  const containers = (spec.containers ?? []).map((c) => ({ ...c }));
  // A lone container runs Flux implicitly (Go operator parity).
  if (containers.length === 1) containers[0].runFlux = true;

  const environment = Object.entries(flux.environment ?? {});
  for (const [key] of environment) {
    if (!ENV_NAME.test(key)) {
      throw new EntrypointSpecError(
        `spec.flux.environment: ${JSON.stringify(key)} is not a valid environment variable name`,
      );
    }
  }

  const lead = flux.bursting?.leadBroker;
  const leadBroker = lead?.address
    ? {
      address: lead.address,
      name: lead.name ?? "",
      size: lead.size ?? 0,
      port: lead.port || BROKER_PORT,
    }
    : undefined;

  return {
    name,
    namespace,
    headlessName: headlessServiceName(mc),
    mainHost: podHostname(mc, 0),
    sizing,
    tasks: spec.tasks ?? 1,
    quorum: quorumOf(sizing, spec.minSize),
    hostlist: hostlistOf(mc, name, sizing.maximumSize),
    interactive: spec.interactive ?? false,
    logging: {
      quiet: spec.logging?.quiet ?? false,
      strict: spec.logging?.strict ?? false,
      debug: spec.logging?.debug ?? false,
      zeromq: spec.logging?.zeromq ?? false,
      timed: spec.logging?.timed ?? false,
    },
    archivePath: spec.archive?.path ?? "",
    view: {
      name: flux.container?.name || DEFAULT_FLUX_VIEW_NAME,
      mountPath: flux.container?.mountPath || DEFAULT_MOUNT_PATH,
      disable: flux.container?.disable ?? false,
      pythonPath: flux.container?.pythonPath ?? "",
      mounted: mountsViewImage(mc, sizing),
      image: flux.container?.image ?? "",
    },
    flux: {
      submitCommand: flux.submitCommand ?? "",
      wrap: flux.wrap ?? "",
      connectTimeout: flux.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT,
      optionFlags: flux.optionFlags ?? "",
      disableSocket: flux.disableSocket ?? false,
      topology: flux.topology ?? "",
      noWaitSocket: flux.noWaitSocket ?? false,
      completeWorkers: flux.completeWorkers ?? false,
      drainGracePeriodSeconds: flux.drainGracePeriodSeconds,
      logLevel: flux.logLevel ?? DEFAULT_LOG_LEVEL,
      schedulerSimple: flux.scheduler?.simple ?? false,
      queuePolicy: flux.scheduler?.queuePolicy || DEFAULT_QUEUE_POLICY,
      brokerConfig: flux.brokerConfig ?? "",
      environment,
      leadBroker,
    },
    containers,
    queueReport: flux.queueReport
      ? { port: flux.queueReport.port, intervalSeconds: flux.queueReport.intervalSeconds }
      : undefined,
  };
}

/**
 * The number of brokers that must be online before the instance starts. Flux's default is all
 * of them, which is right when the cluster is bootstrapped at its full size; when it may grow
 * (maxSize > size) only the initial size can be waited for. minSize, when given, wins.
 */
export function quorumOf(sizing: Sizing, minSize?: number): number | undefined {
  if (minSize) return minSize;
  if (sizing.maximumSize === sizing.effectiveSize) return undefined;
  return sizing.effectiveSize;
}

/** `0` for one host, `start-end` otherwise (Flux hostlist range syntax). */
export function rangeOf(count: number, start: number): string {
  return count === 1 ? `${start}` : `${start}-${start + count - 1}`;
}

/**
 * The broker hostlist in rank order. Brokers of this MiniCluster are `<name>-[0-(maxSize-1)]`;
 * when joining a lead broker elsewhere, that broker is rank 0 followed by the rest of the lead
 * cluster; bursted clusters follow in the order given. A custom hostlist replaces all of it.
 */
function hostlistOf(mc: MiniClusterInput, name: string, maxSize: number): string {
  const bursting = mc.spec?.flux?.bursting;
  if (bursting?.hostlist) return bursting.hostlist;
  const parts: string[] = [];
  const lead = bursting?.leadBroker;
  if (lead?.address) {
    parts.push(lead.address);
    // The lead cluster's other brokers; none when it is a single broker (the Go operator would
    // write an invalid range "1-0" here).
    const others = (lead.size ?? 0) - 1;
    if (others > 0) parts.push(`${lead.name ?? ""}-[${rangeOf(others, 1)}]`);
  } else {
    parts.push(`${name}-[${rangeOf(maxSize, 0)}]`);
  }
  // Named and sized by withDefaults (the Go operator documents those defaults but sets them on a
  // copy).
  for (const cluster of bursting?.clusters ?? []) {
    parts.push(`${cluster.name}-[${rangeOf(cluster.size, 0)}]`);
  }
  return parts.join(",");
}
