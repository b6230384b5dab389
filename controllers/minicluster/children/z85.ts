/**
 * Z85, the ZeroMQ text encoding of binary keys (ZeroMQ RFC 32/Z85): every 4 bytes, read as a
 * big-endian number, become 5 characters of an 85-letter alphabet. Input length must be a
 * multiple of 4 (keys are 32 bytes → 40 characters).
 */

const ALPHABET =
  "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

const DECODE: ReadonlyMap<string, number> = new Map(
  [...ALPHABET].map((char, index) => [char, index]),
);

export function z85Encode(bytes: Uint8Array): string {
  if (bytes.length % 4 !== 0) throw new Error("Z85 input length must be a multiple of 4");
  let out = "";
  for (let i = 0; i < bytes.length; i += 4) {
    // >>> 0 keeps the value an unsigned 32-bit number.
    let value = ((bytes[i] << 24) | (bytes[i + 1] << 16) | (bytes[i + 2] << 8) | bytes[i + 3]) >>>
      0;
    const chunk: string[] = new Array(5);
    for (let j = 4; j >= 0; j--) {
      chunk[j] = ALPHABET[value % 85];
      value = Math.floor(value / 85);
    }
    out += chunk.join("");
  }
  return out;
}

export function z85Decode(text: string): Uint8Array<ArrayBuffer> {
  if (text.length % 5 !== 0) throw new Error("Z85 text length must be a multiple of 5");
  const out = new Uint8Array((text.length / 5) * 4);
  for (let i = 0, o = 0; i < text.length; i += 5, o += 4) {
    let value = 0;
    for (let j = 0; j < 5; j++) {
      const digit = DECODE.get(text[i + j]);
      if (digit === undefined) {
        throw new Error(`invalid Z85 character ${JSON.stringify(text[i + j])}`);
      }
      value = value * 85 + digit;
    }
    if (value > 0xffffffff) throw new Error("invalid Z85 group (value exceeds 32 bits)");
    out[o] = value >>> 24;
    out[o + 1] = (value >>> 16) & 0xff;
    out[o + 2] = (value >>> 8) & 0xff;
    out[o + 3] = value & 0xff;
  }
  return out;
}
