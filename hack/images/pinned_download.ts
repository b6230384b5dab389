/**
 * Files fetched from a package registry while an image is built (never at run time), pinned by
 * sha256: a download whose digest differs is refused, and a verified one is cached under
 * `downloads/<sha256>/<file name>`, so that a second build does not touch the network.
 */
import { cachedDir, imageCacheRoot, sha256File } from "./cache.ts";
import { step } from "./progress.ts";

export interface PinnedFile {
  /** Where to fetch it, e.g. a files.pythonhosted.org URL of PyPI's simple index. */
  url: string;
  sha256: string;
}

export function pinnedFileName(file: PinnedFile): string {
  return new URL(file.url).pathname.split("/").at(-1)!;
}

/** The cached copy of `file`, downloaded and checked first if it is missing. */
export async function ensurePinnedFile(file: PinnedFile): Promise<string> {
  const name = pinnedFileName(file);
  const entry = `${imageCacheRoot()}/downloads/${file.sha256}`;
  await cachedDir(entry, (tmp) =>
    step(`download ${name}`, async () => {
      const response = await fetch(file.url);
      if (!response.ok || response.body === null) {
        throw new Error(`GET ${file.url}: ${response.status} ${response.statusText}`);
      }
      await Deno.writeFile(`${tmp}/${name}`, response.body);
      const actual = await sha256File(`${tmp}/${name}`);
      if (actual !== file.sha256) {
        throw new Error(`${name}: sha256 ${actual}, pinned ${file.sha256}`);
      }
    }));
  return `${entry}/${name}`;
}
