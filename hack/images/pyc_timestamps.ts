/**
 * Python bytecode that stays valid in a layer. A timestamp-checked `.pyc` (PEP 552 flags 0) holds
 * its source's mtime and size, and Python recompiles the module whenever they differ from the
 * source's. layer_tar.sh gives every file of a layer one fixed mtime, so each `.pyc` that
 * `make install` wrote records a build-time mtime its source no longer has: every Python process
 * in a container recompiles every Flux module it imports, and with the view image mounted
 * read-only it cannot even keep the result (`flux modprobe`, which every broker runs at start-up,
 * spent 0.10 CPU s importing Flux this way against 0.06 s with valid bytecode). Setting the
 * recorded mtime to the layer's makes the bytecode valid as it is; the compiled code is unchanged,
 * so no Python of the image's version is needed here. Hash-based `.pyc` files (Debian's standard
 * library) record no mtime and are left alone.
 */

/** The header of a `.pyc` with its source mtime set to `epoch`, or undefined to leave it as it is. */
export function clampedHeader(header: Uint8Array, epoch: number): Uint8Array | undefined {
  // Every magic number ends in \r\n; then the flags, then (flags 0) the mtime and the size.
  if (header.length < 16 || header[2] !== 0x0d || header[3] !== 0x0a) return undefined;
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  if (view.getUint32(4, true) !== 0) return undefined;
  if (view.getUint32(8, true) === epoch >>> 0) return undefined;
  const clamped = header.slice(0, 16);
  new DataView(clamped.buffer).setUint32(8, epoch >>> 0, true);
  return clamped;
}

/**
 * Clamps every timestamp-checked `.pyc` below `dir` (symlinks not followed) to `epoch`; returns how
 * many were rewritten. A file is replaced by a new one (written beside it, then renamed), never
 * written in place: the tree may hold hard links into a cache.
 */
export async function clampPycTimestamps(dir: string, epoch: number): Promise<number> {
  let count = 0;
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) {
      count += await clampPycTimestamps(path, epoch);
    } else if (entry.isFile && entry.name.endsWith(".pyc")) {
      const bytes = await Deno.readFile(path);
      const header = clampedHeader(bytes.subarray(0, 16), epoch);
      if (header === undefined) continue;
      bytes.set(header, 0);
      const { mode } = await Deno.stat(path);
      const next = `${path}.clamped`;
      await Deno.writeFile(next, bytes);
      await Deno.chmod(next, (mode ?? 0o644) & 0o7777);
      await Deno.rename(next, path);
      count++;
    }
  }
  return count;
}
