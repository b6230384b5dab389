/**
 * Semantic checks of a MiniCluster that the CRD's OpenAPI and CEL rules cannot express (map keys,
 * relations across containers, names derived from several fields). The apiserver has already
 * enforced everything in crds/minicluster.yaml; the reconciler reports what this returns through
 * a condition instead of creating children that Kubernetes would reject.
 */
import { withDefaults } from "./defaults.ts";
import type {
  DefaultedContainerVolume,
  DefaultedMiniCluster,
  DefaultedMiniClusterContainer,
  MiniCluster,
} from "./v1alpha2.ts";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_DNS_LABEL = 63;

/**
 * Volume names the operator itself uses in every pod (the Go operator's pod layout), each with
 * what it holds. A user volume with one of these names would clash in the pod spec.
 */
function reservedVolumeNames(mc: DefaultedMiniCluster): Map<string, string> {
  const names = new Map<string, string>([
    ["spack-software", "the operator's software volume"],
    ["flux-operator-home", "the operator's home volume"],
    [`${mc.metadata?.name ?? ""}-entrypoint`, "the entrypoint scripts volume"],
    [
      `${mc.metadata?.name ?? ""}-curve-cert`,
      "the Flux containers' entrypoint volume with the CURVE certificate",
    ],
    [mc.spec.flux.container.name, "the Flux view volume (spec.flux.container.name)"],
  ]);
  if (mc.spec.flux.mungeSecret) {
    names.set("munge-key", "the munge key volume (spec.flux.mungeSecret)");
  }
  return names;
}

/**
 * Pod label keys that others set: the Job controller (`job-name`, `controller-uid` and
 * `batch.kubernetes.io/...`, which Services and the Job's selector match) and the operator (which
 * selects its pods by them). A user's copy would make a pod join another MiniCluster's Services.
 * The CRD refuses the same keys (crds/minicluster.yaml, spec.pod.labels).
 */
const RESERVED_POD_LABELS = [
  "job-name",
  "controller-uid",
  "app.kubernetes.io/managed-by",
  "app.kubernetes.io/name",
  "hpa-selector",
];
/** Prefixes of label and annotation keys the Job controller and the operator own. */
const RESERVED_POD_KEY_PREFIXES = ["batch.kubernetes.io/", "flux-framework.org/"];

/** Problems with `spec.pod.labels` and `spec.pod.annotations` keys others own. */
function reservedPodKeyProblems(mc: MiniCluster): string[] {
  const problems: string[] = [];
  const owner = (key: string) =>
    key.startsWith("batch.kubernetes.io/") || key === "job-name" || key === "controller-uid"
      ? "the Job controller"
      : "the operator";
  const check = (field: string, keys: string[], exact: string[]) => {
    for (const key of keys) {
      if (exact.includes(key) || RESERVED_POD_KEY_PREFIXES.some((p) => key.startsWith(p))) {
        problems.push(
          `spec.pod.${field}: "${key}" is set by ${owner(key)}; choose another key (reserved: ${
            [...exact, ...RESERVED_POD_KEY_PREFIXES.map((p) => `${p}*`)].join(", ")
          })`,
        );
      }
    }
  };
  check("labels", Object.keys(mc.spec?.pod?.labels ?? {}), RESERVED_POD_LABELS);
  check("annotations", Object.keys(mc.spec?.pod?.annotations ?? {}), []);
  return problems;
}

/** Human-readable problems with the MiniCluster's spec; empty when it can be reconciled. */
export function validateSpec(mc: MiniCluster): string[] {
  const problems: string[] = [];
  const name = mc.metadata?.name ?? "";
  const { spec } = withDefaults(mc);
  const viewName = spec.flux.container.name;
  const reserved = reservedVolumeNames({ ...mc, spec });

  const groups: [string, DefaultedMiniClusterContainer[]][] = [
    ["containers", spec.containers],
    ["services", spec.services],
  ];
  for (const [field, containers] of groups) {
    // One pod volume per name: a name shared by containers must mean the same volume.
    const volumes = new Map<string, { json: string; where: string }>();
    containers.forEach((c, i) => {
      const where = `spec.${field}[${i}]`;
      if (c.name === viewName) {
        problems.push(
          `${where}.name "${c.name}" is the name of the Flux view init container (spec.flux.container.name); choose another name`,
        );
      }
      for (const [volumeName, volume] of Object.entries(c.volumes ?? {})) {
        if (!DNS_LABEL.test(volumeName) || volumeName.length > MAX_DNS_LABEL) {
          problems.push(
            `${where}.volumes: volume name "${volumeName}" must be a DNS label (at most 63 lower case letters, digits and '-', starting and ending with a letter or digit)`,
          );
        }
        // The Go operator turns a volume without a source into a PVC with no claim name, which
        // Kubernetes rejects when the Job creates pods; its own examples still contain such
        // volumes, so the CRD accepts them and the reconciler reports this instead.
        if (!hasSource(volume)) {
          problems.push(
            `${where}.volumes: volume "${volumeName}" has no source; set one of claimName, hostPath, configMapName, secretName, csiDriver or emptyDir: true`,
          );
        }
        const reservedFor = reserved.get(volumeName);
        if (reservedFor) {
          problems.push(
            `${where}.volumes: volume name "${volumeName}" is taken by ${reservedFor}; choose another name`,
          );
        }
        const json = canonicalJson(volume);
        const seen = volumes.get(volumeName);
        if (!seen) {
          volumes.set(volumeName, { json, where });
        } else if (seen.json !== json) {
          problems.push(
            `${where}.volumes: volume "${volumeName}" is defined differently in ${seen.where}; containers of one pod share a volume by name, so the definitions must be the same`,
          );
        }
      }
    });
  }

  // Names the operator derives from metadata.name that must be DNS labels too: the pods' entrypoint
  // volume, the longest of them (the services pod's hostname <name>-services is shorter). The CRD
  // refuses such names at apply time too; this catches MiniClusters stored before that rule (a
  // CRD upgrade does not validate existing objects again).
  const entrypointVolume = `${name}-entrypoint`;
  if (entrypointVolume.length > MAX_DNS_LABEL) {
    problems.push(
      `metadata.name is too long: the pods' volume "${entrypointVolume}" must be at most 63 characters, so the name at most ${
        MAX_DNS_LABEL - "-entrypoint".length
      }`,
    );
  }

  // A container that does not run Flux and has ports gets a Service named <name>-<container>.
  spec.containers.forEach((c, i) => {
    if (c.runFlux || !c.ports?.length || !c.name) return;
    const serviceName = `${name}-${c.name}`;
    if (serviceName.length > MAX_DNS_LABEL) {
      problems.push(
        `spec.containers[${i}]: the Service for its ports, "${serviceName}", is longer than 63 characters; shorten the MiniCluster or container name`,
      );
    }
  });

  // The queue reporter listens in the lead broker's pod: no container of the pod may take its port.
  const report = spec.flux.queueReport;
  if (report) {
    spec.containers.forEach((c, i) => {
      if (c.ports?.includes(report.port)) {
        problems.push(
          `spec.flux.queueReport.port ${report.port} is also a port of spec.containers[${i}]; the queue reporter listens on it in the lead broker's pod: choose another port`,
        );
      }
    });
    if (!spec.containers.some((c) => c.runFlux)) {
      problems.push(
        "spec.flux.queueReport needs a container that runs Flux (runFlux: true): its lead broker runs the queue reporter",
      );
    }
  }

  // Bursting clusters are told apart by hostname prefix.
  const burstNames = new Set<string>();
  (spec.flux.bursting?.clusters ?? []).forEach((cluster, i) => {
    if (burstNames.has(cluster.name)) {
      problems.push(
        `spec.flux.bursting.clusters[${i}].name "${cluster.name}" is used twice; every burst cluster needs its own hostname prefix`,
      );
    }
    // On the lead cluster its own hosts come first already. A burst target (leadBroker set) is
    // one of the clusters the lead bursts to: there its own name in the list is what puts its
    // pods in the hostlist (the Go operator's bursting plugin names it so).
    if (cluster.name === name && !spec.flux.bursting?.leadBroker) {
      problems.push(
        `spec.flux.bursting.clusters[${i}].name "${cluster.name}" is this MiniCluster's own name; its hostnames would collide with the local pods`,
      );
    }
    burstNames.add(cluster.name);
  });

  // Refused by the CRD at apply time; a MiniCluster stored before that rule still gets the reason.
  if (Object.keys(mc.spec.pod?.resources ?? {}).length > 0) {
    problems.push(
      "spec.pod.resources is not supported: the Go operator made it the pods' overhead, which Kubernetes refuses unless the pods' RuntimeClass declares exactly that overhead, so its pods were never created; set the containers' resources instead (containers[].resources, flux.container.resources)",
    );
  }

  // Refused by the CRD at apply time; a MiniCluster stored before that rule still gets the reason.
  problems.push(...reservedPodKeyProblems(mc));

  problems.push(...fluxMiniProblems(spec));
  return problems;
}

/** `flux mini <cmd>` as a command word (not inside another word such as `myflux mini`). */
const FLUX_MINI = /(^|[\s;&|(`'"])flux\s+mini(\s|$)/m;

/**
 * Every place that runs a command and says `flux mini`: flux-core removed that command in 0.59
 * (February 2024), so with any current Flux view every such pod fails with "unknown command".
 * `flux submit`, `flux run`, `flux batch`... exist since 0.48, so the replacement works with old
 * views too.
 */
function fluxMiniProblems(spec: DefaultedMiniCluster["spec"]): string[] {
  const found: string[] = [];
  if (FLUX_MINI.test(spec.flux.submitCommand ?? "")) found.push("spec.flux.submitCommand");
  const groups: [string, DefaultedMiniClusterContainer[]][] = [
    ["containers", spec.containers],
    ["services", spec.services],
  ];
  for (const [field, containers] of groups) {
    containers.forEach((c, i) => {
      const texts: [string, string | undefined][] = [
        ["command", c.command],
        ...Object.entries(c.commands ?? {}).map(([k, v]): [string, string | undefined] => [
          `commands.${k}`,
          v,
        ]),
        ["lifeCycle.postStartExec", c.lifeCycle?.postStartExec],
        ["lifeCycle.preStopExec", c.lifeCycle?.preStopExec],
      ];
      for (const [key, text] of texts) {
        if (text && FLUX_MINI.test(text)) found.push(`spec.${field}[${i}].${key}`);
      }
    });
  }
  return found.map((where) =>
    `${where} runs "flux mini", which flux-core removed in 0.59 (February 2024), so every pod would fail with an unknown command; drop "mini" (flux submit, flux run, flux batch, flux alloc exist since flux-core 0.48)`
  );
}

function hasSource(v: DefaultedContainerVolume): boolean {
  return Boolean(
    v.claimName || v.hostPath || v.configMapName || v.secretName || v.csiDriver || v.emptyDir,
  );
}

/** JSON with object keys sorted at every level, so equal values give equal strings. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v) =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
        : v,
  );
}
