/**
 * The consistency oracle of the generated-input test: where each spec field must show up in the
 * children, written from the API reference (docs and CRD), not from the builders, so that a
 * builder or reconciler that drops or misplaces a field is caught.
 *
 *   field                          → where
 *   size (clamped to the maximum)  → Job parallelism and completions; status.size
 *   maxSize at creation            → the broker hostlist <name>-[0-(max-1)]; status.maximumSize
 *   size > maximum                 → SizeClamped=True
 *   deadlineSeconds, backoffLimit  → Job activeDeadlineSeconds, backoffLimit
 *   jobLabels                      → Job labels
 *   network.headlessName           → the pods' subdomain; at creation, the headless Service
 *                                    and broker.toml's domain (the running brokers keep them)
 *   flux.minimalService            → that Service has a cluster IP and port 8050 (else headless)
 *   containers[].environment       → the container's env
 *   containers[].volumes           → pod volumes and the container's mounts
 *   containers[].image, ports      → the container's image and ports
 *   a non-Flux container's ports   → a Service <name>-<container> with those ports
 *   pod.labels                     → pod template labels
 *   services                       → the services pod <name>-services with those containers
 *   command, tasks, logging        → the Flux container's wait script
 *   flux.logLevel, queuePolicy     → the broker options and broker.toml
 *   suspend                        → Job spec.suspend; Suspended=True/Suspended (else False);
 *                                    no Job while suspended from the start
 *
 * The Job's pod template cannot change once the Job exists: template fields follow the spec the
 * Job was created from (`jobFrom`: the first spec that did not suspend), and a spec whose template
 * differs must be reported as Unappliable/JobFieldsImmutable; the maximum size follows the spec at
 * creation (`initial`, the workspace's); everything else follows the current spec.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Container, Pod, Service } from "kubernetes-types/core/v1.d.ts";
import type { MiniClusterStatus } from "../../api/mod.ts";
import type { Spec } from "./arbitraries.ts";
import { defaultOf } from "./crd_schema.ts";
import { commandWords } from "../../controllers/minicluster/children/scripts/parts/command-words.ts";
import { commandLine } from "../../controllers/minicluster/children/scripts/parts/shell.ts";

export interface Observed {
  name: string;
  uid: string;
  generation?: number;
  /** Left out when judging the builders alone. */
  status?: MiniClusterStatus;
  jobs: Job[];
  services: Service[];
  configMaps: ConfigMap[];
  pods: Pod[];
}

/** Job backoffLimit when the spec's is 0 or unset (API reference: "0 or unset means 100"). */
const DEFAULT_BACKOFF_LIMIT = 100;
const BROKER_PORT = 8050;

type SpecContainer = Spec["containers"][number];

const fluxIndex = (spec: Spec) =>
  spec.containers.length === 1 ? 0 : spec.containers.findIndex((c) => c.runFlux);

const headlessName = (spec: Spec, name: string) => spec.network?.headlessName || name;

/** The bootstrapped maximum: maxSize (0 or unset meaning size) of the spec at creation. */
export const maximumOf = (initial: Spec) => initial.maxSize || initial.size || 1;

/** JSON with sorted object keys (maps compare by content). */
function canonical(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : v,
  );
}

/** What of a spec lands in the Job's pod template (immutable once the Job exists). */
function templateProjection(spec: Spec, name: string): string {
  return canonical({
    subdomain: headlessName(spec, name),
    podLabels: spec.pod?.labels ?? {},
    containers: spec.containers.map((c) => ({
      name: c.name,
      image: c.image,
      env: c.environment ?? {},
      volumes: c.volumes ?? {},
      ports: [...new Set(c.ports ?? [])],
    })),
  });
}

function ownedBy(
  obj: { metadata?: { ownerReferences?: { uid: string; controller?: boolean }[] } },
  uid: string,
) {
  return obj.metadata?.ownerReferences?.some((o) => o.uid === uid && o.controller) ?? false;
}

/** Everything in `observed` that disagrees with `spec` (empty when consistent). */
export function consistencyProblems(
  spec: Spec,
  initial: Spec,
  observed: Observed,
  /** The spec the Job was made from; null: no Job yet (suspended from the start). */
  jobFrom: Spec | null = initial,
): string[] {
  const problems: string[] = [];
  const bad = (msg: string) => problems.push(msg);
  const { name, uid } = observed;
  const maximum = maximumOf(initial);
  const size = Math.min(Math.max(spec.size ?? 1, 1), maximum);
  // Before the Job exists, what its pods depend on follows the spec.
  const from = jobFrom ?? spec;
  const templateChanged = templateProjection(spec, name) !== templateProjection(from, name);

  // The Job.
  const job = observed.jobs.find((j) => j.metadata?.name === name && ownedBy(j, uid));
  if (!jobFrom) {
    if (job) bad(`a Job ${name} exists while the MiniCluster was suspended from the start`);
  } else if (!job) bad(`no Job ${name} owned by the MiniCluster`);
  else {
    if (job.spec?.parallelism !== size) {
      bad(`Job parallelism ${job.spec?.parallelism}, want ${size}`);
    }
    if (job.spec?.completions !== size) {
      bad(`Job completions ${job.spec?.completions}, want ${size}`);
    }
    const deadline = spec.deadlineSeconds ?? defaultOf<number>("spec.deadlineSeconds");
    if (job.spec?.activeDeadlineSeconds !== deadline) {
      bad(`Job activeDeadlineSeconds ${job.spec?.activeDeadlineSeconds}, want ${deadline}`);
    }
    const backoff = spec.backoffLimit || DEFAULT_BACKOFF_LIMIT;
    if (job.spec?.backoffLimit !== backoff) {
      bad(`Job backoffLimit ${job.spec?.backoffLimit}, want ${backoff}`);
    }
    for (const [k, v] of Object.entries(spec.jobLabels ?? {})) {
      if (job.metadata?.labels?.[k] !== v) {
        bad(`Job label ${k}=${job.metadata?.labels?.[k]}, want ${v}`);
      }
    }
    if ((job.spec?.suspend ?? false) !== (spec.suspend ?? false)) {
      bad(`Job suspend ${job.spec?.suspend}, want ${spec.suspend ?? false}`);
    }
    problems.push(...templateProblems(from, name, job));
  }

  // Services: the headless (or minimal) one in the running pods' subdomain and one per non-Flux
  // container with ports; no others.
  const services = observed.services.filter((s) => ownedBy(s, uid));
  const wantServices = new Map<string, number[] | undefined>([[
    headlessName(from, name),
    undefined,
  ]]);
  spec.containers.forEach((c, i) => {
    if (i !== fluxIndex(spec) && c.ports?.length) {
      wantServices.set(`${name}-${c.name}`, [...new Set(c.ports)]);
    }
  });
  for (const s of services) {
    if (!wantServices.has(s.metadata!.name!)) bad(`Service ${s.metadata?.name} is not asked for`);
  }
  for (const [svcName, ports] of wantServices) {
    const s = services.find((s) => s.metadata?.name === svcName);
    if (!s) {
      bad(`no Service ${svcName}`);
      continue;
    }
    if (ports) {
      const got = (s.spec?.ports ?? []).map((p) => p.port).sort();
      if (canonical(got) !== canonical([...ports].sort())) {
        bad(`Service ${svcName} ports ${got}, want ${ports}`);
      }
    } else if (spec.flux?.minimalService) {
      if (s.spec?.clusterIP === "None") {
        bad(`Service ${svcName} is headless, want the minimal Service`);
      }
      if (!s.spec?.ports?.some((p) => p.port === BROKER_PORT)) {
        bad(`Service ${svcName} lacks port ${BROKER_PORT}`);
      }
    } else if (s.spec?.clusterIP !== "None") {
      bad(`Service ${svcName} has cluster IP ${s.spec?.clusterIP}, want headless`);
    }
  }

  // The services pod.
  const servicesPod = observed.pods.find((p) =>
    p.metadata?.name === `${name}-services` && ownedBy(p, uid)
  );
  const wantServicesPod = (spec.services ?? []).length > 0;
  if (wantServicesPod && !servicesPod) bad(`no services pod ${name}-services`);
  if (!wantServicesPod && servicesPod && !servicesPod.metadata?.deletionTimestamp) {
    bad(`services pod ${name}-services is not asked for`);
  }
  if (wantServicesPod && servicesPod) {
    const got = servicesPod.spec?.containers.map((c) => c.name).join(",");
    const want = (spec.services ?? []).map((c) => c.name).join(",");
    if (got !== want) bad(`services pod containers ${got}, want ${want}`);
  }

  // The scripts.
  const cm = observed.configMaps.find((c) =>
    c.metadata?.name === `${name}-entrypoint` && ownedBy(c, uid)
  );
  if (!cm) bad(`no ConfigMap ${name}-entrypoint`);
  else problems.push(...scriptProblems(spec, name, size, maximum, cm, headlessName(from, name)));

  // The status.
  const status = observed.status;
  if (status) {
    if (status.observedGeneration !== observed.generation) {
      bad(`status.observedGeneration ${status.observedGeneration}, want ${observed.generation}`);
    }
    if (status.maximumSize !== maximum) {
      bad(`status.maximumSize ${status.maximumSize}, want ${maximum}`);
    }
    // status.size is the Job's parallelism: 0 while there is no Job.
    const wantSize = jobFrom ? size : 0;
    if (status.size !== wantSize) bad(`status.size ${status.size}, want ${wantSize}`);
    const cond = (type: string) => status.conditions?.find((c) => c.type === type);
    if (cond("SpecInvalid")?.status !== "False") {
      bad(`SpecInvalid is ${cond("SpecInvalid")?.status}: ${cond("SpecInvalid")?.message}`);
    }
    const unappliable = cond("Unappliable");
    if (templateChanged) {
      if (unappliable?.status !== "True" || unappliable.reason !== "JobFieldsImmutable") {
        bad(
          `the pod template changed: want Unappliable=True/JobFieldsImmutable, got ${unappliable?.status}/${unappliable?.reason}`,
        );
      }
    } else if (unappliable?.status !== "False") {
      bad(`Unappliable is ${unappliable?.status}/${unappliable?.reason}: ${unappliable?.message}`);
    }
    const suspended = cond("Suspended");
    const wantSuspended = spec.suspend ? ["True", "Suspended"] : ["False", "NotSuspended"];
    if (canonical([suspended?.status, suspended?.reason]) !== canonical(wantSuspended)) {
      bad(`Suspended is ${suspended?.status}/${suspended?.reason}, want ${wantSuspended}`);
    }
    const clamped = (spec.size ?? 1) > maximum;
    if (cond("SizeClamped")?.status !== (clamped ? "True" : "False")) {
      bad(`SizeClamped is ${cond("SizeClamped")?.status}, want ${clamped}`);
    }
  }
  return problems;
}

/** The Job's pod template against the spec it was created from. */
function templateProblems(initial: Spec, name: string, job: Job): string[] {
  const problems: string[] = [];
  const bad = (msg: string) => problems.push(msg);
  const pod = job.spec?.template;
  if (pod?.spec?.subdomain !== headlessName(initial, name)) {
    bad(`pod subdomain ${pod?.spec?.subdomain}, want ${headlessName(initial, name)}`);
  }
  for (const [k, v] of Object.entries(initial.pod?.labels ?? {})) {
    if (pod?.metadata?.labels?.[k] !== v) {
      bad(`pod label ${k}=${pod?.metadata?.labels?.[k]}, want ${v}`);
    }
  }
  const containers = pod?.spec?.containers ?? [];
  const podVolumes = new Set((pod?.spec?.volumes ?? []).map((v) => v.name));
  initial.containers.forEach((c: SpecContainer, i) => {
    // The Flux container takes the MiniCluster's name (API reference).
    const containerName = i === fluxIndex(initial) ? name : c.name!;
    const got: Container | undefined = containers.find((k) => k.name === containerName);
    if (!got) {
      bad(`no container ${containerName} in the pod template`);
      return;
    }
    if (got.image !== c.image) {
      bad(`container ${containerName} image ${got.image}, want ${c.image}`);
    }
    for (const [k, v] of Object.entries(c.environment ?? {})) {
      const e = got.env?.find((e) => e.name === k);
      // The API server drops an empty value (omitempty): the variable is set to "".
      if (!e) bad(`container ${containerName} has no env ${k}`);
      else if ((e.value ?? "") !== v) {
        bad(
          `container ${containerName} env ${k}=${JSON.stringify(e.value)}, want ${
            JSON.stringify(v)
          }`,
        );
      }
    }
    for (const [volName, v] of Object.entries(c.volumes ?? {})) {
      if (!podVolumes.has(volName)) bad(`no pod volume ${volName}`);
      const mount = got.volumeMounts?.find((m) => m.name === volName);
      if (mount?.mountPath !== v.path) {
        bad(`container ${containerName} mounts ${volName} at ${mount?.mountPath}, want ${v.path}`);
      }
    }
    const ports = (got.ports ?? []).map((p) => p.containerPort);
    if (canonical(ports) !== canonical([...new Set(c.ports ?? [])])) {
      bad(`container ${containerName} ports ${ports}, want ${c.ports ?? []}`);
    }
  });
  return problems;
}

/**
 * The Flux container's wait script and the init script against the current spec; broker.toml
 * connects through `subdomain`, the running pods' one.
 */
function scriptProblems(
  spec: Spec,
  name: string,
  size: number,
  maximum: number,
  cm: ConfigMap,
  subdomain: string,
): string[] {
  const problems: string[] = [];
  const bad = (msg: string) => problems.push(msg);
  const index = fluxIndex(spec);
  const wait = cm.data?.[`wait-${index}`];
  const init = cm.data?.["flux-view"];
  if (!wait) return [`ConfigMap ${name}-entrypoint has no wait-${index}`];
  if (!init) return [`ConfigMap ${name}-entrypoint has no flux-view init script`];
  // The command as the job's words: one line, operators escaped (as Go's unquoted expansion).
  const command = commandWords(commandLine(spec.containers[index].command));
  if (command && !wait.includes(`--quiet --watch ${command}`)) {
    bad(`the wait script does not submit ${JSON.stringify(command)}`);
  }
  if (!command && !wait.includes("flux broker --config-path")) {
    bad("no command, but the wait script is not interactive");
  }
  // Node and task flags for the size the Job runs at (API reference: -N size, -n tasks).
  // tasks 0: -N alone (one task per node), as the Go operator documents.
  const tasks = spec.tasks ?? 1;
  const flags = tasks === 0
    ? new RegExp(`flags=\\(-N ${size}(\\)| (?!-n))`)
    : tasks >= size
    ? `flags=(-N ${size} -n${tasks}`
    : `flags=(-n${tasks}`;
  if (typeof flags === "string" ? !wait.includes(flags) : !flags.test(wait)) {
    bad(`the wait script lacks ${flags}`);
  }
  const strict = spec.logging?.strict ?? false;
  if (wait.includes("set -eEu -o pipefail") !== strict) {
    bad(`logging.strict ${strict} not in the wait script`);
  }
  const quiet = spec.logging?.quiet ?? false;
  const level = quiet ? 0 : spec.flux?.logLevel ?? defaultOf<number>("spec.flux.logLevel");
  if (!wait.includes(`-Slog-stderr-level=${level}`)) {
    bad(`the wait script lacks -Slog-stderr-level=${level}`);
  }
  if (wait.includes("-Sbroker.rc2_none") !== (spec.interactive ?? false)) {
    bad("interactive not reflected in the broker options");
  }
  const range = maximum === 1 ? "0" : `0-${maximum - 1}`;
  if (!init.includes(`${name}-[${range}]`)) bad(`the hostlist is not ${name}-[${range}]`);
  // "" (what the Go operator's Python SDK sends) is the default policy.
  const policy = spec.flux?.scheduler?.queuePolicy ||
    defaultOf<string>("spec.flux.scheduler.queuePolicy");
  if (!init.includes(`queue-policy = "${policy}"`)) bad(`broker.toml lacks queue-policy ${policy}`);
  if (!init.includes(`%h.${subdomain}.`)) bad(`broker.toml does not connect through ${subdomain}`);
  return problems;
}
