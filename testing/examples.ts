/**
 * The files of examples/ as tests load them: their documents, their MiniClusters, and the local
 * cluster's version of a MiniCluster. An example carries the image a user would pull and names, in
 * its header, the local image that has the same programs (`# Local image: <ref>`); on the local
 * cluster a MiniCluster runs for real only with the local images and pinned to a real node
 * (docs/tutorials.md), which `onRealNodes` does to a copy.
 */
import { parseAllDocuments } from "yaml";
import type { MiniCluster } from "../api/mod.ts";
import { FLUX_VIEW_IMAGE } from "../hack/images/refs.ts";
import { REAL_NODE_LABEL } from "../hack/cluster/real_node_config.ts";

export const EXAMPLES_DIR = new URL("../examples/", import.meta.url);

export interface KubeDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** The example files' names (`hello-world.yaml`, ...), sorted. */
export function exampleFiles(): string[] {
  return [...Deno.readDirSync(EXAMPLES_DIR)]
    .filter((e) => e.isFile && e.name.endsWith(".yaml"))
    .map((e) => e.name)
    .sort();
}

export function exampleText(file: string): string {
  return Deno.readTextFileSync(new URL(file, EXAMPLES_DIR));
}

/** Every document of the file, in order; a document that fails to parse throws. */
export function exampleDocs(file: string): KubeDoc[] {
  return parseAllDocuments(exampleText(file)).map((d) => {
    if (d.errors.length > 0) throw new Error(`examples/${file}: ${d.errors[0].message}`);
    return d.toJS() as KubeDoc | null;
  }).filter((d): d is KubeDoc => d !== null && typeof d === "object");
}

export function isMiniCluster(doc: KubeDoc): boolean {
  return doc.kind === "MiniCluster" && doc.apiVersion.startsWith("flux-framework.org/");
}

export function exampleMiniClusters(file: string): MiniCluster[] {
  return exampleDocs(file).filter(isMiniCluster) as unknown as MiniCluster[];
}

/** The image its header names for the local cluster (`# Local image: <ref>`), if any. */
export function localImageOf(text: string): string | undefined {
  return text.match(/^# Local image: (\S+)/m)?.[1];
}

/** Whether a container of `mc` runs Flux: the one marked runFlux, or the only one. */
function runsFlux(mc: MiniCluster, container: { runFlux?: boolean }): boolean {
  const containers = mc.spec?.containers ?? [];
  return container.runFlux === true || containers.length === 1;
}

/**
 * A copy of `mc` for the local cluster's real nodes: its Flux containers on `localImage`, the
 * local Flux view, and the real nodes' selector and toleration (docs/tutorials.md). Containers
 * that do not run Flux (sidecars) keep their images.
 */
export function onRealNodes(mc: MiniCluster, localImage: string): MiniCluster {
  const copy = structuredClone(mc);
  const spec = copy.spec!;
  spec.containers = spec.containers.map((c) => runsFlux(mc, c) ? { ...c, image: localImage } : c);
  spec.flux = { ...spec.flux, container: { ...spec.flux?.container, image: FLUX_VIEW_IMAGE } };
  spec.pod = {
    ...spec.pod,
    nodeSelector: { ...spec.pod?.nodeSelector, [REAL_NODE_LABEL]: "true" },
    tolerations: [
      ...(spec.pod?.tolerations ?? []),
      { key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" },
    ],
  };
  return copy;
}

/** The MiniClusters of an example, each ready for the real nodes with the header's local image. */
export function exampleOnRealNodes(file: string): MiniCluster[] {
  const local = localImageOf(exampleText(file));
  if (!local) throw new Error(`examples/${file} names no local image ("# Local image: ...")`);
  return exampleMiniClusters(file).map((mc) => onRealNodes(mc, local));
}
