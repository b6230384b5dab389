// The images every real node gets: the sandbox (pause) image, cluster DNS, and the images
// MiniClusters run (flux-view, flux-app, the operator), all built locally (hack/images) and
// imported, since no registry is ever reachable from a node.

import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cachedDir, imageCacheRoot, inputKey, sha256File } from "../images/cache.ts";
import { writeImageArchive } from "../images/docker_archive.ts";
import { ensureImages } from "../images/images.ts";
import { run } from "../images/progress.ts";
import { LOCAL_REGISTRY, PAUSE_IMAGE, SOURCE_DATE_EPOCH } from "../images/refs.ts";
import type { RealNodeImages } from "./real_nodes.ts";

/** Binaries of hack/build-binaries.sh that real nodes need beside the control plane's. */
export const REAL_NODE_BINARIES = ["kubelet", "kube-proxy", "coredns"];

const COREDNS_IMAGE = `${LOCAL_REGISTRY}/coredns:local`;

const LAYER_TAR = join(dirname(fileURLToPath(import.meta.url)), "..", "images", "layer_tar.sh");

/**
 * A static binary as an image: the binary alone (at `/<name>`), one layer. Keyed by the binary's digest, so a
 * rebuilt binary is a new archive (and a new import).
 */
export async function staticBinaryArchive(
  binary: string,
  ref: string,
  config: { Entrypoint: string[]; User?: string },
  name = basename(binary),
): Promise<string> {
  const key = await inputKey({
    [name]: await sha256File(binary),
    ref,
    config,
    created: SOURCE_DATE_EPOCH,
  });
  const dir = await cachedDir(join(imageCacheRoot(), `${name}-${key}`), async (tmp) => {
    const root = join(tmp, "rootfs");
    await Deno.mkdir(root);
    await Deno.copyFile(binary, join(root, name));
    await Deno.chmod(join(root, name), 0o755);
    const layer = join(tmp, "layer.tar");
    await run(["bash", LAYER_TAR, root, layer, `${SOURCE_DATE_EPOCH}`]);
    const staging = join(tmp, "staging");
    await Deno.mkdir(staging);
    await writeImageArchive(
      {
        refs: [ref],
        layers: [{
          path: layer,
          digest: `sha256:${await sha256File(layer)}`,
          size: (await Deno.stat(layer)).size,
          createdBy: `hack/cluster/real_node_images.ts: the ${name} binary`,
        }],
        config,
        created: SOURCE_DATE_EPOCH,
      },
      staging,
      join(tmp, "image.tar"),
    );
    await Deno.remove(staging, { recursive: true });
    await Deno.remove(root, { recursive: true });
    await Deno.remove(layer);
  });
  return join(dir, "image.tar");
}

/**
 * Builds (or finds in the cache) every image a real node imports. `binDir` may still be coming
 * (hack/build-binaries.sh): the images build meanwhile, so that on a fresh machine the Go builds
 * and the image builds (downloads, then Flux from source) overlap.
 */
export async function realNodeImages(binDir: string | Promise<string>): Promise<RealNodeImages> {
  const [built, dir] = await Promise.all([ensureImages(), binDir]);
  return {
    pause: PAUSE_IMAGE,
    coredns: COREDNS_IMAGE,
    archives: [
      await staticBinaryArchive(join(dir, "coredns"), COREDNS_IMAGE, {
        Entrypoint: ["/coredns"],
      }),
      ...built.map((i) => i.archive),
    ],
  };
}
