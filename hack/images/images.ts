/**
 * The entry point for other code: `ensureImages()` returns archives of the local images, building
 * (and checking) whatever is missing from the cache. Each archive is keyed by its refs, config
 * and layer digests, so an unchanged image costs only the look-ups of its inputs.
 */
import { cachedDir, exists, imageCacheRoot, inputKey, removeTree } from "./cache.ts";
import { archiveJsonFiles, type ImageSpec, writeImageArchive } from "./docker_archive.ts";
import { fluxAppImageSpec, fluxViewImageSpec } from "./flux_images.ts";
import { mpiImageSpec } from "./mpi_image.ts";
import { operatorImageSpec } from "./operator_image.ts";
import { pauseImageSpec } from "./pause_image.ts";
import { log, step } from "./progress.ts";
import { IMAGE_NAMES, type ImageName } from "./refs.ts";
import { verifyImage } from "./verify.ts";
import { ensureDebianPackages } from "../debian.ts";

export * from "./refs.ts";

export interface ImageArchive {
  name: ImageName;
  /** Every tag in the archive, the main one first. */
  refs: string[];
  /** A docker-archive (and OCI layout) tarball: `ctr -n k8s.io images import <archive>`. */
  archive: string;
}

const SPECS: Record<ImageName, () => Promise<ImageSpec>> = {
  "pause": pauseImageSpec,
  "flux-app": fluxAppImageSpec,
  "flux-view": fluxViewImageSpec,
  "operator": operatorImageSpec,
  "mpi": mpiImageSpec,
};

export interface EnsureOptions {
  /** Check images again even when their archives are cached. */
  verify?: boolean;
}

/** What the builds run besides coreutils, tar and gcc (on every machine of this kind). */
const BUILD_PACKAGES = ["mmdebstrap", "util-linux", "unzip"];

/** Builds what is missing and returns the archives, in the order asked for. */
export async function ensureImages(
  names: readonly ImageName[] = IMAGE_NAMES,
  options: EnsureOptions = {},
): Promise<ImageArchive[]> {
  await ensureDebianPackages(BUILD_PACKAGES);
  const archives: ImageArchive[] = [];
  for (const name of names) archives.push(await ensureImage(name, options));
  return archives;
}

async function ensureImage(name: ImageName, options: EnsureOptions): Promise<ImageArchive> {
  const spec = await SPECS[name]();
  const root = imageCacheRoot();
  // The archive's JSON files name the refs, the config and every layer digest.
  const key = await inputKey([...(await archiveJsonFiles(spec)).entries()]);
  const entry = `${root}/archives/${name}-${key}`;
  const archive = `${entry}/${name}.tar`;
  let verified = false;
  await cachedDir(entry, async (tmp) => {
    await step(`${name}: write archive`, async () => {
      await writeImageArchive(spec, `${tmp}/staging`, `${tmp}/${name}.tar`);
      await removeTree(`${tmp}/staging`);
    });
    await verifyImage(name, spec.layers, `${tmp}/verify`);
    verified = true;
  });
  if (options.verify && !verified) {
    await verifyImage(name, spec.layers, `${root}/tmp/verify-${name}-${Deno.pid}`);
  }
  await linkLatest(root, name, archive);
  return { name, refs: [...spec.refs], archive };
}

/** `images/<name>.tar` names the newest archive of each image, for people and other tools. */
async function linkLatest(root: string, name: ImageName, archive: string): Promise<void> {
  const link = `${root}/${name}.tar`;
  const current = await Deno.readLink(link).catch(() => null);
  if (current === archive) return;
  const tmp = `${link}.tmp-${Deno.pid}`;
  if (await exists(tmp)) await Deno.remove(tmp);
  await Deno.symlink(archive, tmp);
  await Deno.rename(tmp, link);
  log(`${link} -> ${archive}`);
}
