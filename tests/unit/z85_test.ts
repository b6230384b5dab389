import assert from "node:assert/strict";
import fc from "fast-check";
import { z85Decode, z85Encode } from "../../controllers/minicluster/children/z85.ts";

// The test vector of ZeroMQ RFC 32 (Z85).
const RFC_BYTES = new Uint8Array([0x86, 0x4f, 0xd2, 0x6f, 0xb5, 0x59, 0xf7, 0x5b]);

Deno.test("z85 encodes the RFC 32 test vector as HelloWorld", () => {
  assert.equal(z85Encode(RFC_BYTES), "HelloWorld");
});

Deno.test("z85 decodes HelloWorld to the RFC 32 test vector", () => {
  assert.deepEqual(z85Decode("HelloWorld"), RFC_BYTES);
});

Deno.test("z85 encodes the extremes of a 4-byte group", () => {
  assert.equal(z85Encode(new Uint8Array(4)), "00000");
  assert.equal(z85Encode(new Uint8Array([0xff, 0xff, 0xff, 0xff])), "%nSc0");
  assert.deepEqual(z85Decode("%nSc0"), new Uint8Array([0xff, 0xff, 0xff, 0xff]));
});

Deno.test("z85 round-trips any multiple of 4 bytes", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 64 }), (values) => {
      const bytes = new Uint8Array(values.slice(0, values.length - (values.length % 4)));
      const text = z85Encode(bytes);
      assert.equal(text.length, (bytes.length / 4) * 5);
      assert.deepEqual(z85Decode(text), bytes);
    }),
  );
});

Deno.test("z85 rejects bad lengths, characters and overflowing groups", () => {
  assert.throws(() => z85Encode(new Uint8Array(3)), /multiple of 4/);
  assert.throws(() => z85Decode("Hell"), /multiple of 5/);
  assert.throws(() => z85Decode("Hell~"), /invalid Z85 character/);
  assert.throws(() => z85Decode("%nSc1"), /exceeds 32 bits/);
});
