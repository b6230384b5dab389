/**
 * The image cache: every artefact lives in a directory named by a hash of its inputs, so that a
 * change of any input makes a new entry and an unchanged input finds the old one. An entry appears
 * at once or not at all (built under a temporary name, then renamed), and one lock per entry keeps
 * two processes from building it at the same time.
 */
import { log, step } from "./progress.ts";

/** `${MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minicluster-operator}/images`. */
export function imageCacheRoot(): string {
  const env = (name: string) => Deno.env.get(name) || undefined;
  const base = env("MINICLUSTER_CACHE") ??
    `${env("XDG_CACHE_HOME") ?? `${env("HOME") ?? "/root"}/.cache`}/minicluster-operator`;
  return `${base}/images`;
}

export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * sha256 of a file of any size. Web Crypto has no streaming digest and layers reach hundreds of
 * MB, so this asks coreutils.
 */
export async function sha256File(path: string): Promise<string> {
  const out = await new Deno.Command("sha256sum", { args: ["--", path], stderr: "inherit" })
    .output();
  if (!out.success) throw new Error(`sha256sum ${path} failed`);
  return new TextDecoder().decode(out.stdout).split(" ")[0];
}

/** JSON with sorted object keys, so that a key does not depend on property order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))
        : v,
  );
}

/** A short hash of the inputs of an artefact: 16 hex digits are plenty for one machine's cache. */
export async function inputKey(inputs: unknown): Promise<string> {
  return (await sha256Hex(canonicalJson(inputs))).slice(0, 16);
}

export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/**
 * Removes a tree, refusing if anything is mounted inside it: `rm -rf` across a bind mount of /dev
 * or /proc would delete the machine's own files. (Chroot mounts live in a private mount namespace,
 * so they are never visible here; this guards against a mount made some other way.)
 */
export async function removeTree(path: string): Promise<void> {
  const real = await Deno.realPath(path).catch(() => null);
  if (real === null) return;
  const mountinfo = await Deno.readTextFile("/proc/self/mountinfo");
  const inside = mountinfo.split("\n").map((line) => line.split(" ")[4]).filter((mp) =>
    mp !== undefined && (mp === real || mp.startsWith(`${real}/`))
  );
  if (inside.length > 0) {
    throw new Error(`refusing to remove ${real}: mounts inside it: ${inside.join(" ")}`);
  }
  await Deno.remove(real, { recursive: true });
}

/** Takes the lock; says so (with a heartbeat) if another process holds it. */
async function waitForLock(lock: Deno.FsFile, name: string): Promise<void> {
  const locked = lock.lock(true);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const soon = new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), 500));
  const free = await Promise.race([locked.then(() => true), soon]);
  clearTimeout(timer);
  if (!free) await step(`waiting for another process building ${name}`, () => locked);
}

/**
 * Returns the cache entry `dir`, building it first if it is missing: `build` fills a temporary
 * directory beside it, which is renamed to `dir` once complete. Holds `dir.lock` (flock) while
 * building; a process that waited for the lock finds the entry built and returns it.
 */
export async function cachedDir(
  dir: string,
  build: (tmp: string) => Promise<void>,
): Promise<string> {
  if (await exists(dir)) return dir;
  const parent = dir.slice(0, dir.lastIndexOf("/"));
  const name = dir.slice(dir.lastIndexOf("/") + 1);
  await Deno.mkdir(parent, { recursive: true });
  using lock = await Deno.open(`${dir}.lock`, { create: true, write: true });
  await waitForLock(lock, name);
  try {
    if (await exists(dir)) return dir;
    // Left by a process that died while holding the lock.
    for await (const entry of Deno.readDir(parent)) {
      if (entry.name.startsWith(`${name}.tmp-`)) await removeTree(`${parent}/${entry.name}`);
    }
    const tmp = `${dir}.tmp-${Deno.pid}`;
    await Deno.mkdir(tmp);
    try {
      await build(tmp);
      await Deno.rename(tmp, dir);
    } catch (e) {
      // The logs outlive a failed build, beside where the entry would have been.
      for await (const file of Deno.readDir(tmp)) {
        if (file.isFile && file.name.endsWith(".log")) {
          await Deno.rename(`${tmp}/${file.name}`, `${dir}.failed.${file.name}`);
          log(`kept ${dir}.failed.${file.name}`);
        }
      }
      await removeTree(tmp).catch((err) => log(`could not remove ${tmp}: ${err}`));
      throw e;
    }
    return dir;
  } finally {
    await lock.unlock();
  }
}
