import { strict as assert } from "node:assert";
import { clampedHeader, clampPycTimestamps } from "../../hack/images/pyc_timestamps.ts";

const EPOCH = 1735689600;

/** A `.pyc`: Python 3.11's magic, the flags, the source mtime and size, then a body. */
function pyc(flags: number, mtime: number, body = [0xe3, 1, 2, 3]): Uint8Array {
  const bytes = new Uint8Array(16 + body.length);
  const view = new DataView(bytes.buffer);
  bytes.set([0xa7, 0x0d, 0x0d, 0x0a], 0);
  view.setUint32(4, flags, true);
  view.setUint32(8, mtime, true);
  view.setUint32(12, 746, true);
  bytes.set(body, 16);
  return bytes;
}

const mtimeOf = (bytes: Uint8Array) => new DataView(bytes.buffer).getUint32(8, true);

Deno.test("pyc timestamps: a timestamp-checked header gets the layer's mtime, the rest is kept", () => {
  const header = clampedHeader(pyc(0, 1795899582).subarray(0, 16), EPOCH)!;
  assert.equal(mtimeOf(header), EPOCH);
  assert.deepEqual([...header.subarray(0, 8)], [0xa7, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0]);
  assert.equal(new DataView(header.buffer).getUint32(12, true), 746, "the source size stays");
});

Deno.test("pyc timestamps: hash-based, already clamped and non-bytecode files are left alone", () => {
  assert.equal(clampedHeader(pyc(3, 1795899582).subarray(0, 16), EPOCH), undefined);
  assert.equal(clampedHeader(pyc(1, 1795899582).subarray(0, 16), EPOCH), undefined);
  assert.equal(clampedHeader(pyc(0, EPOCH).subarray(0, 16), EPOCH), undefined);
  assert.equal(
    clampedHeader(new TextEncoder().encode("#!/bin/sh\necho not bytecode"), EPOCH),
    undefined,
  );
  assert.equal(clampedHeader(new Uint8Array(8), EPOCH), undefined);
});

Deno.test("pyc timestamps: a tree's bytecode is replaced, never written through a hard link", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/cache/pkg/__pycache__`, { recursive: true });
    const cached = `${dir}/cache/pkg/__pycache__/mod.cpython-311.pyc`;
    await Deno.writeFile(cached, pyc(0, 1795899582));
    await Deno.chmod(cached, 0o444);
    await Deno.writeFile(`${dir}/cache/pkg/hashed.pyc`, pyc(3, 1795899582));
    await Deno.writeTextFile(`${dir}/cache/pkg/mod.py`, "x = 1\n");
    const cp = new Deno.Command("cp", { args: ["-al", `${dir}/cache`, `${dir}/tree`] });
    assert.equal((await cp.output()).code, 0);

    assert.equal(await clampPycTimestamps(`${dir}/tree`, EPOCH), 1);
    const clamped = `${dir}/tree/pkg/__pycache__/mod.cpython-311.pyc`;
    assert.equal(mtimeOf(await Deno.readFile(clamped)), EPOCH);
    assert.deepEqual([...(await Deno.readFile(clamped)).subarray(16)], [0xe3, 1, 2, 3]);
    assert.equal((await Deno.stat(clamped)).mode! & 0o777, 0o444, "the mode is kept");
    assert.equal(mtimeOf(await Deno.readFile(cached)), 1795899582, "the cache is untouched");
    assert.equal(mtimeOf(await Deno.readFile(`${dir}/tree/pkg/hashed.pyc`)), 1795899582);
    assert.equal(
      await clampPycTimestamps(`${dir}/tree`, EPOCH),
      0,
      "a second pass changes nothing",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
