/**
 * What the scanners of JSON text share (list_items.ts, managed_fields.ts): JSON's structure is
 * ASCII, so they read character codes, and only strings (their quotes and escapes) need care.
 */

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;

/**
 * Where the string whose text starts at `from` closes (its unescaped quote), or -1 when it does
 * not close in `text`. A quote is escaped when an odd number of backslashes precedes it.
 */
export function closingQuote(text: string, from: number): number {
  for (let q = text.indexOf('"', from); q >= 0; q = text.indexOf('"', q + 1)) {
    let backslashes = 0;
    while (q - backslashes - 1 >= from && text.charCodeAt(q - backslashes - 1) === BACKSLASH) {
      backslashes++;
    }
    if (backslashes % 2 === 0) return q;
  }
  return -1;
}
