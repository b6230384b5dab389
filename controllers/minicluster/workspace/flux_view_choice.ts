/**
 * How a new Job's pods get the Flux view (docs/flux-view.md): the view image mounted as an image
 * volume, or copied by the init container. Decided once, when the workspace is made (workspace.ts
 * keeps the answer for the Job's life: a Job's pod template cannot change).
 *
 * In order:
 * 1. `spec.flux.container.viewFrom` ImageVolume or Copy: what the MiniCluster asks for;
 * 2. Auto: the operator's `--flux-view-mount` image-volume or copy (an admin who knows the
 *    cluster's runtime);
 * 3. auto: ImageVolume where the nodes can mount it (clusterMountsViewImage), else Copy.
 *
 * `flux.container.disable` (Flux in the application image) needs no view: the pods build as before
 * whatever is chosen (children/sizing.ts mountsViewImage).
 */
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import type { FluxView } from "../children/sizing.ts";

/** `--flux-view-mount`: what `viewFrom: Auto` means in this operator. */
export type FluxViewMount = "auto" | "image-volume" | "copy";
export const FLUX_VIEW_MOUNTS: readonly FluxViewMount[] = ["auto", "image-volume", "copy"];

/** What the operator knows of one node: `status.nodeInfo`'s two versions. */
export interface NodeRuntime {
  name: string;
  /** `containerd://2.2.1`, `cri-o://1.33.0`, `kwok-v0.7.0` (KWOK's fake nodes), "" unknown. */
  containerRuntimeVersion: string;
  /** `v1.37.0`. */
  kubeletVersion: string;
}

/** The first runtime versions that mount an image volume with subPath (KEP-4639). */
const RUNTIME_FLOORS: Readonly<Record<string, readonly [number, number]>> = {
  // subPath on image volumes arrived in containerd 2.2 (2.1 mounts the whole image instead).
  containerd: [2, 2],
  // CRI-O added image volume subPath for Kubernetes 1.33 (cri-o#9050).
  "cri-o": [1, 33],
};
/**
 * The kubelet that has the ImageVolume gate on by default. A kubelet is never newer than its
 * API server (the version skew policy), so every node at 1.35 or later means an API server that
 * keeps the image volume too.
 */
const KUBELET_FLOOR: readonly [number, number] = [1, 35];

/** `major.minor` of a version string (`v1.37.0`, `2.2.1-rc.1`), undefined when none. */
export function majorMinor(version: string): [number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(version.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

function atLeast(v: [number, number] | undefined, floor: readonly [number, number]): boolean {
  return v !== undefined && (v[0] > floor[0] || (v[0] === floor[0] && v[1] >= floor[1]));
}

/** KWOK's fake nodes run no container: they say nothing about image volumes. */
export function isSimulated(node: NodeRuntime): boolean {
  return node.containerRuntimeVersion.startsWith("kwok");
}

/** Why one node cannot mount the view image; undefined when it can. */
export function nodeProblem(node: NodeRuntime): string | undefined {
  const [runtime, version = ""] = node.containerRuntimeVersion.split("://");
  const floor = RUNTIME_FLOORS[runtime];
  if (!floor) {
    return `node ${node.name} runs ${node.containerRuntimeVersion || "an unreported runtime"}`;
  }
  if (!atLeast(majorMinor(version), floor)) {
    return `node ${node.name} runs ${node.containerRuntimeVersion} (image volumes with subPath ` +
      `need ${runtime} ${floor.join(".")} or later)`;
  }
  if (!atLeast(majorMinor(node.kubeletVersion), KUBELET_FLOOR)) {
    return `node ${node.name} runs kubelet ${node.kubeletVersion || "of an unreported version"} ` +
      `(image volumes are on by default from ${KUBELET_FLOOR.join(".")})`;
  }
  return undefined;
}

/**
 * Whether a pod can mount the view image wherever it lands: every node that runs containers
 * (KWOK's are left out) can, and there is at least one. A pod may be placed on any node, so one
 * node that cannot is enough for the copy.
 */
export function clusterMountsViewImage(
  nodes: readonly NodeRuntime[],
): { mounts: boolean; why: string } {
  const real = nodes.filter((n) => !isSimulated(n));
  if (real.length === 0) return { mounts: false, why: "no node runs containers" };
  const problems = real.map(nodeProblem).filter((p): p is string => p !== undefined);
  if (problems.length > 0) {
    const more = problems.length > 1 ? ` and ${problems.length - 1} more` : "";
    return { mounts: false, why: `${problems[0]}${more}` };
  }
  return { mounts: true, why: `all ${real.length} nodes can mount image volumes with subPath` };
}

/**
 * What the choice needs of the cluster: its nodes' runtimes, from a cache (node_runtimes.ts);
 * undefined when the operator may not list Nodes (a namespaced install: a RoleBinding grants no
 * cluster-scoped kind).
 */
export interface NodeRuntimeSource {
  nodes(): Promise<readonly NodeRuntime[] | undefined>;
}

/** Decides the view's mode of a new Job (see above). */
export class FluxViewChooser {
  constructor(
    readonly mount: FluxViewMount,
    /** None: the nodes cannot be read, and `auto` copies. */
    readonly source?: NodeRuntimeSource,
  ) {}

  /** The mode for `mc`'s Job; reads the nodes only for Auto under `--flux-view-mount=auto`. */
  async choose(mc: DefaultedMiniCluster): Promise<FluxView> {
    const asked = mc.spec.flux.container.viewFrom;
    if (asked === "ImageVolume" || asked === "Copy") return asked;
    if (this.mount === "image-volume") return "ImageVolume";
    if (this.mount === "copy") return "Copy";
    const nodes = await this.source?.nodes();
    return nodes && clusterMountsViewImage(nodes).mounts ? "ImageVolume" : "Copy";
  }
}
