/**
 * Typed defaulting of a MiniCluster: what the apiserver fills in from the CRD's `default`s, plus
 * the defaults the Go Flux Operator derives at reconcile time (maxSize, backoffLimit, headless
 * name, the implicit Flux container, bursting cluster names and sizes). Pure: no IO, the input is
 * never modified.
 *
 * The reconciler and the builders work on `DefaultedMiniCluster`, whose defaulted fields are not
 * optional, so a missing default is a type error instead of an `undefined` in a Job.
 */
import type {
  Bursting,
  ContainerVolume,
  DefaultedBursting,
  DefaultedContainerVolume,
  DefaultedFluxSpec,
  DefaultedMiniCluster,
  DefaultedMiniClusterContainer,
  DefaultedMiniClusterSpec,
  FluxSpec,
  MiniCluster,
  MiniClusterContainer,
  MiniClusterSpec,
} from "./v1alpha2.ts";

/** CRD defaults, the same values as the `default:` entries of crds/minicluster.yaml. */
export const DEFAULTS = {
  size: 1,
  tasks: 1,
  deadlineSeconds: 31_500_000,
  interactive: false,
  cleanup: false,
  containerImage: "ghcr.io/rse-ops/accounting:app-latest",
  fluxViewImage: "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble",
  fluxViewName: "flux-view",
  fluxViewMountPath: "/mnt/flux",
  fluxViewFrom: "Auto",
  connectTimeout: "5s",
  logLevel: 6,
  queuePolicy: "fcfs",
  leadBrokerPort: 8050,
  curveCertKey: "curve.cert",
  queueReportPort: 8060,
  queueReportIntervalSeconds: 30,
} as const;

/** Derived default: Job backoffLimit when spec.backoffLimit is 0 or unset (Go operator parity). */
export const DEFAULT_BACKOFF_LIMIT = 100;

/** The sizes a spec asks for, with their defaults. */
export interface SpecSizes {
  /** spec.size, the CRD's default when unset; not clamped (the status says when it is below 1). */
  size: number;
  /** spec.maxSize, where 0 or unset means size (v1alpha2). */
  maxSize: number;
}

/**
 * spec.size and spec.maxSize with their defaults. withDefaults takes them from here, and so does a
 * status report of a spec that cannot be defaulted or validated: one definition of what the user
 * asked for.
 */
export function specSizes(spec: Pick<MiniClusterSpec, "size" | "maxSize"> | undefined): SpecSizes {
  const size = spec?.size ?? DEFAULTS.size;
  return { size, maxSize: spec?.maxSize || size };
}

/** Name of the bursting cluster at `index` when it has none: burst-0, burst-1, ... */
const burstClusterName = (index: number): string => `burst-${index}`;

/**
 * The MiniCluster with every default applied. Idempotent: withDefaults(withDefaults(mc)) equals
 * withDefaults(mc). Throws when metadata.name is missing (the headless name derives from it).
 */
export function withDefaults(mc: MiniCluster): DefaultedMiniCluster {
  const name = mc.metadata?.name;
  if (!name) throw new Error("withDefaults: MiniCluster has no metadata.name");
  const spec = mc.spec;
  const { size, maxSize } = specSizes(spec);
  const containers = spec.containers ?? [];
  const { gang, ...given } = spec;
  const defaulted: DefaultedMiniClusterSpec = {
    ...given,
    containers: containers.map((c) =>
      // A lone container runs Flux whatever it says (the Go operator sets runFlux on it).
      defaultContainer(c, containers.length === 1 ? true : c.runFlux ?? false)
    ),
    services: (spec.services ?? []).map((c) => defaultContainer(c, c.runFlux ?? false)),
    network: { ...spec.network, headlessName: spec.network?.headlessName || name },
    jobLabels: spec.jobLabels ?? {},
    jobAnnotations: spec.jobAnnotations ?? {},
    interactive: spec.interactive ?? DEFAULTS.interactive,
    flux: defaultFlux(spec.flux, size),
    logging: {
      ...spec.logging,
      quiet: spec.logging?.quiet ?? false,
      strict: spec.logging?.strict ?? false,
      debug: spec.logging?.debug ?? false,
      zeromq: spec.logging?.zeromq ?? false,
      timed: spec.logging?.timed ?? false,
    },
    cleanup: spec.cleanup ?? DEFAULTS.cleanup,
    size,
    maxSize,
    // 0 means "not set" in v1alpha2.
    backoffLimit: spec.backoffLimit || DEFAULT_BACKOFF_LIMIT,
    tasks: spec.tasks ?? DEFAULTS.tasks,
    deadlineSeconds: spec.deadlineSeconds ?? DEFAULTS.deadlineSeconds,
    pod: {
      ...spec.pod,
      labels: spec.pod?.labels ?? {},
      annotations: spec.pod?.annotations ?? {},
    },
  };
  // The gang is the brokers Flux needs to start (minSize, its quorum), else all of them.
  if (gang) defaulted.gang = { ...gang, minCount: gang.minCount || spec.minSize || size };
  return { ...mc, spec: defaulted };
}

function defaultContainer(
  c: MiniClusterContainer,
  runFlux: boolean,
): DefaultedMiniClusterContainer {
  const { volumes, ...rest } = c;
  const out: DefaultedMiniClusterContainer = {
    ...rest,
    image: c.image ?? DEFAULTS.containerImage,
    pullAlways: c.pullAlways ?? false,
    runFlux,
  };
  if (volumes) {
    out.volumes = Object.fromEntries(
      Object.entries(volumes).map(([k, v]) => [k, defaultVolume(v)]),
    );
  }
  return out;
}

function defaultVolume(v: ContainerVolume): DefaultedContainerVolume {
  return { ...v, readOnly: v.readOnly ?? false, emptyDir: v.emptyDir ?? false };
}

function defaultFlux(flux: FluxSpec | undefined, size: number): DefaultedFluxSpec {
  const f = flux ?? {};
  const { bursting, curveCertSecretRef, queueReport, ...rest } = f;
  const out: DefaultedFluxSpec = {
    ...rest,
    container: {
      ...f.container,
      image: f.container?.image ?? DEFAULTS.fluxViewImage,
      name: f.container?.name ?? DEFAULTS.fluxViewName,
      mountPath: f.container?.mountPath ?? DEFAULTS.fluxViewMountPath,
      disable: f.container?.disable ?? false,
      pullAlways: f.container?.pullAlways ?? false,
      viewFrom: f.container?.viewFrom ?? DEFAULTS.fluxViewFrom,
    },
    // The CRD defaults connectTimeout only inside a given spec.flux, as Go's does: without one the
    // broker gets no -Stbon.connect_timeout and Flux's own default applies ("" says the same).
    connectTimeout: flux ? f.connectTimeout ?? DEFAULTS.connectTimeout : "",
    logLevel: f.logLevel ?? DEFAULTS.logLevel,
    // Kept as stored: "" (what the Go operator's Python SDK sends) is read as fcfs where it is used.
    scheduler: { ...f.scheduler, queuePolicy: f.scheduler?.queuePolicy ?? DEFAULTS.queuePolicy },
  };
  if (bursting) out.bursting = defaultBursting(bursting, size);
  if (queueReport) {
    out.queueReport = {
      ...queueReport,
      port: queueReport.port ?? DEFAULTS.queueReportPort,
      intervalSeconds: queueReport.intervalSeconds ?? DEFAULTS.queueReportIntervalSeconds,
    };
  }
  if (curveCertSecretRef) {
    out.curveCertSecretRef = {
      ...curveCertSecretRef,
      key: curveCertSecretRef.key || DEFAULTS.curveCertKey,
    };
  }
  return out;
}

function defaultBursting(b: Bursting, size: number): DefaultedBursting {
  const { leadBroker, clusters, ...rest } = b;
  const out: DefaultedBursting = { ...rest };
  if (leadBroker) {
    out.leadBroker = { ...leadBroker, port: leadBroker.port ?? DEFAULTS.leadBrokerPort };
  }
  if (clusters) {
    out.clusters = clusters.map((c, i) => ({
      ...c,
      name: c.name || burstClusterName(i),
      size: c.size || size,
    }));
  }
  return out;
}
