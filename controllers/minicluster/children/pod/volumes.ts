/**
 * Volumes and volume mounts of MiniCluster pods: the operator's own (the Flux view, a home
 * directory, the software copy or the mounted view image, the entrypoint scripts with the CURVE
 * certificate, the munge key) and the user's `volumes` of every kind.
 */
import type {
  KeyToPath,
  Volume,
  VolumeMount,
  VolumeProjection,
} from "kubernetes-types/core/v1.d.ts";
import {
  curveSecretName,
  entrypointConfigMapName,
  fluxEntrypointVolumeName,
  VIEW_IMAGE_VOLUME,
} from "../names.ts";
import { CURVE_CERT_KEY, ENTRYPOINT_MOUNT_PATH, INIT_SCRIPT_FILE } from "../scripts/parts/paths.ts";
import type {
  DefaultedContainerVolume,
  DefaultedMiniCluster,
  DefaultedMiniClusterContainer,
} from "../../../../api/mod.ts";
import { pullPolicy } from "./pull_policy.ts";

/** Scripts are executable; nothing in the volume is writable (the volume is read-only anyway). */
const SCRIPT_MODE = 0o755;
/**
 * The certificate's mode when only root, or the pod's fsGroup, must read it (kubelet writes Secret
 * files as root; with an fsGroup it makes them root:fsGroup and adds group read, 0440).
 */
const CURVE_CERT_MODE = 0o400;
/** The mode when a non-root uid without an fsGroup must read it: no other way in for that uid. */
const CURVE_CERT_MODE_ANY_USER = 0o444;

/** Spack software copied out of the view; the path is fixed by the flux-view images. */
const SOFTWARE_VOLUME = "spack-software";
const SOFTWARE_PATH = "/opt/software";
/**
 * Where the view image's spack view (`/opt/views/._view/<hash>`, files linking into
 * `/opt/software`) is mounted (sizing.ts mountsViewImage): at the paths it was built for, so every
 * absolute link and RPATH resolves unchanged; read-only, nothing is copied.
 */
const VIEWS_PATH = "/opt/views";
/** A writable home for the Flux user (the wait scripts fall back to it). */
const HOME_VOLUME = "flux-operator-home";
const HOME_PATH = "/home/flux-operator";
/** flux.mungeSecret: the key every broker must share, where munge expects it. */
const MUNGE_VOLUME = "munge-key";
const MUNGE_KEY_FILE = "munge.key";
const MUNGE_KEY_PATH = "/etc/munge/munge.key";
/** An emptyDir volume without a path is shared memory (the Go operator's only choice). */
const EMPTY_DIR_DEFAULT_PATH = "/dev/shm";

/** One ConfigMap key the Job mounts under ENTRYPOINT_MOUNT_PATH. */
export interface EntrypointItem {
  key: string;
  path: string;
  mode: number;
}

/** Whether a non-Flux container's command is wrapped in a generated start script. */
export function wrapsEntrypoint(container: DefaultedMiniClusterContainer): boolean {
  return !container.runFlux && container.noWrapEntrypoint !== true;
}

/**
 * The ConfigMap keys the Job mounts: `wait-<i>` for each Flux container i, `start-<i>` for each
 * wrapped non-Flux container i, and the init script under the flux view container's name unless
 * the view image is mounted (no init container then).
 */
export function entrypointItems(mc: DefaultedMiniCluster, viewMounted = false): EntrypointItem[] {
  const items: EntrypointItem[] = [];
  mc.spec.containers.forEach((container, i) => {
    if (container.runFlux) items.push(script(`wait-${i}`));
    if (container.runFlux && drains(mc)) items.push(script(`drain-${i}`));
    if (wrapsEntrypoint(container)) items.push(script(`start-${i}`));
  });
  if (!viewMounted) {
    items.push({ key: mc.spec.flux.container.name, path: INIT_SCRIPT_FILE, mode: SCRIPT_MODE });
  }
  return items;
}

/** Removed follower brokers drain first (spec.flux.drainGracePeriodSeconds, scripts/drain.ts). */
export function drains(mc: DefaultedMiniCluster): boolean {
  return mc.spec.flux.drainGracePeriodSeconds !== undefined;
}

const script = (key: string): EntrypointItem => ({ key, path: `${key}.sh`, mode: SCRIPT_MODE });

/** Absolute path of a script in the containers, by its ConfigMap key. */
export function entrypointScriptPath(mc: DefaultedMiniCluster, key: string): string {
  const item = entrypointItems(mc, true).find((it) => it.key === key);
  if (!item) throw new Error(`the entrypoint ConfigMap has no key ${key}`);
  return `${ENTRYPOINT_MOUNT_PATH}/${item.path}`;
}

/**
 * The mode of the mounted CURVE certificate: the tightest that the Flux containers' user can read.
 * The wait script copies it as that user into the broker's config dir and makes the copy 0600
 * (Flux refuses a certificate that group or other can read); the mounted file is only the source.
 *
 * - An fsGroup on the pod: 0400, which kubelet turns into 0440 root:fsGroup; every container
 *   process has the fsGroup as a supplementary group, so any uid reads it and nobody else.
 * - Every Flux container runs as root (runAsUser 0, or unset: the image's user, root in the Flux
 *   images): 0400.
 * - A Flux container runs as a non-root uid and the pod has no fsGroup: 0444. A Secret volume's
 *   files are owned by root and Kubernetes cannot give them another owner, so "other" is the only
 *   way in for that uid. The operator does not set an fsGroup itself: kubelet would change the
 *   ownership of every volume of the pod (the user's PersistentVolumes too).
 *
 * Only the Flux containers mount the certificate (fluxEntrypointVolume); sidecars, the init
 * container and the services pod never see it, so 0444 opens it to no other container.
 */
export function curveCertMode(mc: DefaultedMiniCluster): number {
  const pod = mc.spec.pod?.securityContext;
  if (pod?.fsGroup !== undefined && pod.fsGroup !== null) return CURVE_CERT_MODE;
  const nonRoot = mc.spec.containers.some((c) => {
    if (!c.runFlux) return false;
    const uid = c.securityContext?.runAsUser ?? pod?.runAsUser;
    return uid !== undefined && uid !== null && uid !== 0;
  });
  return nonRoot ? CURVE_CERT_MODE_ANY_USER : CURVE_CERT_MODE;
}

function scriptSources(mc: DefaultedMiniCluster, viewMounted: boolean): VolumeProjection {
  const items: KeyToPath[] = entrypointItems(mc, viewMounted).map(({ key, path, mode }) => ({
    key,
    path,
    mode,
  }));
  return { configMap: { name: entrypointConfigMapName(mc), items } };
}

/**
 * The scripts, read-only, for the containers that do not run Flux (the init container and
 * sidecars). A projected volume like fluxEntrypointVolume, so both look alike at the same path.
 */
export function entrypointVolume(mc: DefaultedMiniCluster, viewMounted = false): Volume {
  const sources = [scriptSources(mc, viewMounted)];
  return { name: entrypointConfigMapName(mc), projected: { sources } };
}

/**
 * The scripts and the CURVE certificate in one read-only directory, for the Flux containers only.
 * A projected volume joins the ConfigMap and the Secret: a second volume mounted inside a
 * read-only ConfigMap mount cannot create its mount point, and the wait scripts keep reading
 * /flux_operator/curve.cert as in Go. Each container mounts one of the two volumes there.
 */
export function fluxEntrypointVolume(mc: DefaultedMiniCluster, viewMounted = false): Volume {
  const sources: VolumeProjection[] = [
    scriptSources(mc, viewMounted),
    {
      secret: {
        name: curveSecretName(mc),
        items: [{ key: CURVE_CERT_KEY, path: CURVE_CERT_KEY, mode: curveCertMode(mc) }],
      },
    },
  ];
  return { name: fluxEntrypointVolumeName(mc), projected: { sources } };
}

/**
 * The volumes every Job pod has, whatever the user asked for. With the view image mounted the
 * emptyDir at the mount path holds only the generated configuration (broker.toml, hostlist, the
 * certificate, the run and state directories, the helper scripts).
 */
export function operatorVolumes(mc: DefaultedMiniCluster, viewMounted = false): Volume[] {
  const view = mc.spec.flux.container;
  const volumes: Volume[] = [
    viewMounted
      ? {
        name: VIEW_IMAGE_VOLUME,
        image: { reference: view.image, pullPolicy: pullPolicy({ pullAlways: view.pullAlways }) },
      } as Volume
      : { name: SOFTWARE_VOLUME, emptyDir: {} },
    { name: HOME_VOLUME, emptyDir: {} },
    { name: view.name, emptyDir: {} },
    entrypointVolume(mc, viewMounted),
  ];
  if (mc.spec.containers.some((c) => c.runFlux)) {
    volumes.push(fluxEntrypointVolume(mc, viewMounted));
  }
  const munge = mc.spec.flux.mungeSecret;
  if (munge) {
    volumes.push({ name: MUNGE_VOLUME, secret: { secretName: munge, defaultMode: 0o400 } });
  }
  return volumes;
}

/**
 * Mounts of the operator's volumes shared by the init container and the app containers; the
 * entrypoint directory holds the CURVE certificate only for a container that runs Flux.
 */
export function operatorMounts(mc: DefaultedMiniCluster, runsFlux = false): VolumeMount[] {
  const entrypoint = runsFlux ? fluxEntrypointVolumeName(mc) : entrypointConfigMapName(mc);
  return [
    { name: HOME_VOLUME, mountPath: HOME_PATH },
    { name: mc.spec.flux.container.name, mountPath: mc.spec.flux.container.mountPath },
    { name: entrypoint, mountPath: `${ENTRYPOINT_MOUNT_PATH}/`, readOnly: true },
  ];
}

/** The software copy, mounted in app containers only (the init container fills the view). */
export const softwareMount: VolumeMount = { name: SOFTWARE_VOLUME, mountPath: SOFTWARE_PATH };

/**
 * The view image's two directories at the paths they were built for (subPath on an image volume:
 * containerd 2.2, CRI-O 1.33), read-only; in every app container instead of the software copy.
 */
export const viewImageMounts: readonly VolumeMount[] = [
  { name: VIEW_IMAGE_VOLUME, mountPath: VIEWS_PATH, subPath: "opt/views", readOnly: true },
  { name: VIEW_IMAGE_VOLUME, mountPath: SOFTWARE_PATH, subPath: "opt/software", readOnly: true },
];

/**
 * The munge key for a Flux container, unless the user already mounts something there (two
 * mounts on one path make the pod invalid). A subPath keeps the rest of /etc/munge of the image.
 */
export function mungeMount(
  mc: DefaultedMiniCluster,
  userMounts: VolumeMount[],
): VolumeMount | undefined {
  if (!mc.spec.flux.mungeSecret) return undefined;
  const taken = userMounts.some((m) =>
    m.mountPath === MUNGE_KEY_PATH || m.mountPath.replace(/\/+$/, "") === "/etc/munge"
  );
  if (taken) return undefined;
  return { name: MUNGE_VOLUME, mountPath: MUNGE_KEY_PATH, subPath: MUNGE_KEY_FILE, readOnly: true };
}

/** The user's volumes of a set of containers, one per name (a later definition wins), by name. */
export function userVolumes(containers: DefaultedMiniClusterContainer[]): Volume[] {
  const byName = new Map<string, DefaultedContainerVolume>();
  for (const container of containers) {
    for (const [name, volume] of Object.entries(container.volumes ?? {})) byName.set(name, volume);
  }
  return [...byName.keys()].sort().map((name) => userVolume(name, byName.get(name)!));
}

/**
 * One user volume. The source is chosen in the Go operator's order: CSI driver, Secret,
 * emptyDir, hostPath, ConfigMap, PersistentVolumeClaim.
 */
export function userVolume(name: string, v: DefaultedContainerVolume): Volume {
  if (v.csiDriver) {
    return {
      name,
      csi: {
        driver: v.csiDriver,
        ...(nonEmpty(v.csiDriverAttributes)
          ? { volumeAttributes: sorted(v.csiDriverAttributes!) }
          : {}),
      },
    };
  }
  if (v.secretName) return { name, secret: { secretName: v.secretName } };
  if (v.emptyDir) {
    return {
      name,
      emptyDir: {
        // The Go operator knows "memory" and the node's default medium.
        ...(v.emptyDirMedium?.toLowerCase() === "memory" ? { medium: "Memory" } : {}),
        ...(v.emptyDirSizeLimit ? { sizeLimit: v.emptyDirSizeLimit } : {}),
      },
    };
  }
  if (v.hostPath) return { name, hostPath: { path: v.hostPath, type: "Directory" } };
  if (v.configMapName) {
    const items = Object.keys(v.items ?? {}).sort().map((key) => ({ key, path: v.items![key] }));
    // The Go operator names this volume after the ConfigMap, so a mount by the volume's own
    // name finds nothing unless both names agree; the volume's name is the one mounts use.
    return {
      name,
      configMap: { name: v.configMapName, ...(items.length > 0 ? { items } : {}) },
    };
  }
  if (v.claimName) {
    return {
      name,
      persistentVolumeClaim: { claimName: v.claimName },
    };
  }
  throw new Error(
    `volume ${name} names no source (csiDriver, secretName, emptyDir, hostPath, configMapName or claimName)`,
  );
}

/** Mounts of one container's own volumes, by name. */
export function containerVolumeMounts(container: DefaultedMiniClusterContainer): VolumeMount[] {
  const volumes = container.volumes ?? {};
  return Object.keys(volumes).sort().map((name) => {
    const v = volumes[name];
    if (v.emptyDir && !v.csiDriver && !v.secretName) {
      return { name, mountPath: v.path || EMPTY_DIR_DEFAULT_PATH };
    }
    if (!v.path) {
      throw new Error(`volume ${name} of container ${container.name ?? ""} needs a path`);
    }
    return { name, mountPath: v.path, ...(v.readOnly ? { readOnly: true } : {}) };
  });
}

function nonEmpty(map: Record<string, string> | undefined): boolean {
  return map !== undefined && Object.keys(map).length > 0;
}

function sorted(map: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(map).sort().map((k) => [k, map[k]]));
}
