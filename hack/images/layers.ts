/**
 * Cached layer tars: a directory tree turned into a layer by layer_tar.sh, stored with its digest
 * under a key of what went into it, so that an image whose inputs did not change reuses its
 * layers and two images built on the same base share that layer byte for byte.
 */
import { cachedDir, imageCacheRoot, inputKey, removeTree, sha256File } from "./cache.ts";
import type { Layer } from "./docker_archive.ts";
import { run, step } from "./progress.ts";
import { SOURCE_DATE_EPOCH } from "./refs.ts";

const LAYER_TAR = new URL("./layer_tar.sh", import.meta.url).pathname;

/** Tars `dir` into `out` and describes the result. */
async function writeLayer(dir: string, out: string, createdBy: string): Promise<Layer> {
  await run([LAYER_TAR, dir, out, String(SOURCE_DATE_EPOCH)]);
  const [hex, stat] = await Promise.all([sha256File(out), Deno.stat(out)]);
  return { path: out, digest: `sha256:${hex}`, size: stat.size, createdBy };
}

/**
 * The layer `name` for `inputs`: if it is not cached, `tree` returns the directory to tar (it may
 * build it in the temporary directory it is given, which is removed afterwards).
 */
export async function cachedLayer(
  name: string,
  inputs: unknown,
  createdBy: string,
  tree: (tmp: string) => Promise<string>,
): Promise<Layer> {
  const key = await inputKey({
    inputs,
    createdBy,
    epoch: SOURCE_DATE_EPOCH,
    tar: await Deno.readTextFile(LAYER_TAR),
  });
  const entry = `${imageCacheRoot()}/layers/${name}-${key}`;
  await cachedDir(entry, async (tmp) => {
    const dir = await tree(`${tmp}/tree`);
    const layer = await step(
      `layer ${name}: tar`,
      () => writeLayer(dir, `${tmp}/layer.tar`, createdBy),
    );
    const { path: _path, ...description } = layer;
    await Deno.writeTextFile(`${tmp}/layer.json`, JSON.stringify(description, null, 2) + "\n");
    await removeTree(`${tmp}/tree`);
  });
  const description = JSON.parse(await Deno.readTextFile(`${entry}/layer.json`));
  return { ...description, path: `${entry}/layer.tar` };
}
