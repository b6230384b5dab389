/**
 * JSON text made of printable characters only, for readers stricter than JSON: YAML (the
 * apiserver's apply-patch+yaml decoder) and TOML basic strings both accept `\uXXXX` escapes but
 * refuse some characters raw that JSON.stringify leaves as they are.
 */

/**
 * DEL and the C1 controls (NEL too, which some YAML readers take for a line break), the
 * byte-order mark, U+FFFE/U+FFFF, and the line and paragraph separators. JSON.stringify already
 * escapes the C0 controls and lone surrogates.
 */
const UNPRINTABLE = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/g;

/**
 * JSON.stringify(value) with every unprintable character written as `\uXXXX`, which reads back
 * as the same character. Outside strings JSON text is ASCII, so only string contents change.
 */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(
    UNPRINTABLE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
