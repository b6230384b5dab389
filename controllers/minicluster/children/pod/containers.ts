/**
 * Container specs of MiniCluster pods: the flux-view init container, the application containers
 * of the Job (the Flux runner starts through its wait script, other containers through their
 * start script unless `noWrapEntrypoint`) and the containers of the services pod.
 */
import type {
  Container,
  EnvVar,
  Lifecycle,
  ResourceRequirements,
  VolumeMount,
} from "kubernetes-types/core/v1.d.ts";
import { jobName } from "../names.ts";
import type {
  DefaultedMiniCluster,
  DefaultedMiniClusterContainer,
  ResourceRequirements as ApiResources,
} from "../../../../api/mod.ts";
import { ENTRYPOINT_MOUNT_PATH, INIT_SCRIPT_FILE } from "../scripts/parts/paths.ts";
import {
  containerVolumeMounts,
  drains,
  entrypointScriptPath,
  mungeMount,
  operatorMounts,
  softwareMount,
  viewImageMounts,
  wrapsEntrypoint,
} from "./volumes.ts";
import { pullPolicy } from "./pull_policy.ts";

/**
 * The flux-view init container: copies Flux (unless `flux.container.disable`, when the app image
 * brings its own) into the shared view and writes the broker config, so it always runs.
 */
export function fluxViewContainer(mc: DefaultedMiniCluster): Container {
  const spec = mc.spec.flux.container;
  return dropEmpty({
    name: spec.name,
    image: spec.image,
    command: ["/bin/bash", `${ENTRYPOINT_MOUNT_PATH}/${INIT_SCRIPT_FILE}`],
    workingDir: spec.workingDir || undefined,
    resources: resources(spec.resources),
    volumeMounts: operatorMounts(mc),
    imagePullPolicy: pullPolicy({ pullAlways: spec.pullAlways }),
    securityContext: spec.securityContext,
    stdin: true,
    tty: true,
  });
}

/**
 * The application containers of every Job pod, in the order of `spec.containers`; each gets the
 * software copy, or the view image's mounts when it is mounted (`viewMounted`).
 */
export function jobContainers(mc: DefaultedMiniCluster, viewMounted = false): Container[] {
  const view = viewMounted ? viewImageMounts : [softwareMount];
  return mc.spec.containers.map((c, i) => {
    const flux = c.runFlux;
    const own = containerVolumeMounts(c);
    const munge = flux ? mungeMount(mc, own) : undefined;
    const mounts = [...operatorMounts(mc, flux), ...view, ...own, ...(munge ? [munge] : [])];
    let command: string[] | undefined;
    if (flux) command = ["/bin/bash", entrypointScriptPath(mc, `wait-${i}`)];
    else if (wrapsEntrypoint(c)) {
      command = ["/bin/bash", entrypointScriptPath(mc, `start-${i}`)];
    } else command = userCommand(c);
    // The Flux runner takes the MiniCluster's name (the Go operator's choice, which tools rely on).
    const name = flux ? jobName(mc) : requireName(c, `spec.containers[${i}]`);
    const drain = flux && drains(mc) ? entrypointScriptPath(mc, `drain-${i}`) : undefined;
    return container(c, name, command, mounts, drain);
  });
}

/** The containers of the services pod: never wrapped, no Flux, only their own volumes. */
export function serviceContainers(mc: DefaultedMiniCluster): Container[] {
  return mc.spec.services.map((c, i) =>
    container(c, requireName(c, `spec.services[${i}]`), userCommand(c), containerVolumeMounts(c))
  );
}

/**
 * An unwrapped container runs its `command` through a shell (the Go operator dropped it and ran
 * the image's entrypoint); without a command the image's entrypoint runs.
 */
function userCommand(c: DefaultedMiniClusterContainer): string[] | undefined {
  return c.command?.trim() ? ["/bin/sh", "-c", c.command] : undefined;
}

function requireName(c: DefaultedMiniClusterContainer, where: string): string {
  if (!c.name) throw new Error(`${where} needs a name (only the Flux container may omit it)`);
  return c.name;
}

function container(
  c: DefaultedMiniClusterContainer,
  name: string,
  command: string[] | undefined,
  volumeMounts: VolumeMount[],
  drainHook?: string,
): Container {
  return dropEmpty({
    name,
    image: c.image,
    command,
    workingDir: c.workingDir || undefined,
    // Each port once: server-side apply refuses a list with two entries of one key (a 500 that
    // looks transient and was retried forever).
    ports: [...new Set(c.ports ?? [])].map((port) => ({ containerPort: port, protocol: "TCP" })),
    env: env(c),
    resources: resources(c.resources),
    volumeMounts,
    lifecycle: lifecycle(c, drainHook),
    imagePullPolicy: pullPolicy(c),
    securityContext: c.securityContext,
    stdin: true,
    tty: true,
  });
}

/**
 * Limits and requests as quantity strings (the CRD takes numbers too; the API server answers with
 * strings, and a number here would differ from what it stores on every comparison).
 */
function resources(r: ApiResources | undefined): ResourceRequirements | undefined {
  if (!r) return undefined;
  const quantities = (list: Record<string, number | string> | undefined) =>
    list && Object.keys(list).length > 0
      ? Object.fromEntries(Object.keys(list).sort().map((k) => [k, String(list[k])]))
      : undefined;
  const out: ResourceRequirements = {};
  const limits = quantities(r.limits);
  const requests = quantities(r.requests);
  if (limits) out.limits = limits;
  if (requests) out.requests = requests;
  if (r.claims && r.claims.length > 0) out.claims = r.claims;
  return out;
}

/** `environment` then `secrets` (as secretKeyRef), each by name so the output is stable. */
function env(c: DefaultedMiniClusterContainer): EnvVar[] {
  const plain = Object.keys(c.environment ?? {}).sort().map((name) => ({
    name,
    value: c.environment![name],
  }));
  const secret = Object.keys(c.secrets ?? {}).sort().map((name) => ({
    name,
    valueFrom: { secretKeyRef: { name: c.secrets![name].name, key: c.secrets![name].key } },
  }));
  return [...plain, ...secret];
}

/**
 * postStart/preStop hooks. The Go operator passed the whole string as the program name, so
 * "echo hi" looked for a binary called "echo hi"; a shell runs it as written instead. A Flux
 * container that drains (`drainHook`, the path of its drain script) runs it as its preStop,
 * before the user's own (preStopCommand).
 */
function lifecycle(
  c: DefaultedMiniClusterContainer,
  drainHook?: string,
): Lifecycle | undefined {
  const { postStartExec, preStopExec } = c.lifeCycle ?? {};
  const preStop = preStopCommand(preStopExec, drainHook);
  if (!postStartExec && !preStop) return undefined;
  return {
    ...(postStartExec
      ? { postStart: { exec: { command: ["/bin/sh", "-c", postStartExec] } } }
      : {}),
    ...(preStop ? { preStop: { exec: { command: preStop } } } : {}),
  };
}

/**
 * The preStop command: the user's `preStopExec` through a shell; with the drain, the drain script
 * first (the rank's jobs end before the user's command runs, e.g. to save their output), then
 * the user's command as one argument of its own shell (never spliced into the text), and the
 * drain's failure (jobs cancelled) wins over the user's exit code, so the kubelet reports it.
 */
export function preStopCommand(
  preStopExec: string | undefined,
  drainHook: string | undefined,
): string[] | undefined {
  if (!drainHook) return preStopExec ? ["/bin/sh", "-c", preStopExec] : undefined;
  if (!preStopExec) return ["/bin/bash", drainHook];
  return [
    "/bin/sh",
    "-c",
    `/bin/bash ${drainHook}; drained=$?; /bin/sh -c "$1"; own=$?; ` +
    `if [ "$drained" -ne 0 ]; then exit "$drained"; fi; exit "$own"`,
    "preStop",
    preStopExec,
  ];
}

/** Drops absent fields, empty lists and empty objects, so server-side apply claims only what we set. */
function dropEmpty(c: Container): Container {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(c)) {
    if (value === undefined) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    if (isEmptyObject(value)) continue;
    out[key] = value;
  }
  return out as unknown as Container;
}

function isEmptyObject(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  return Object.values(value).every((v) => v === undefined || isEmptyObject(v));
}
