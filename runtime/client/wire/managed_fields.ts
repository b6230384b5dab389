/**
 * An object's `metadata.managedFields` cut from its JSON text before it is parsed (left as `[]`).
 *
 * The server sends managedFields with every object of every watch event; the caches drop them
 * (transforms.ts). They are the largest part of most objects as parsed: hundreds of small objects
 * of field paths (`"f:metadata":{"f:labels":{...}}`), made by JSON.parse only to be dropped. A
 * watch line is one object's text, so the array is found by a scan of the object's first level and
 * of its metadata only, as the list reader does for each item of a list (list_items.ts): JSON's
 * structure is ASCII, and only strings (their quotes and escapes) need care.
 */

import * as scan from "./json_scan.ts";

/**
 * `text` (one JSON object) with its `metadata.managedFields` array emptied; `text` itself when it
 * has none, or when it is not an object this can read (JSON.parse then says what is wrong).
 */
export function withoutManagedFields(text: string): string {
  let depth = 0;
  /** The last string read at the object's first level and in its metadata: the next value's key. */
  let key = "";
  let inMetadata = false;
  let cutFrom = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === scan.QUOTE) {
      const end = scan.closingQuote(text, i + 1);
      if (end < 0) return text;
      if (depth === 1 || (depth === 2 && inMetadata)) key = text.slice(i + 1, end);
      i = end;
    } else if (c === scan.OPEN_BRACE || c === scan.OPEN_BRACKET) {
      depth++;
      if (depth === 2) {
        inMetadata = c === scan.OPEN_BRACE && key === "metadata";
        key = "";
      } else if (depth === 3 && inMetadata && c === scan.OPEN_BRACKET && key === "managedFields") {
        cutFrom = i;
      }
    } else if (c === scan.CLOSE_BRACE || c === scan.CLOSE_BRACKET) {
      if (depth === 3 && cutFrom >= 0) return text.slice(0, cutFrom) + "[]" + text.slice(i + 1);
      // The metadata has closed without managedFields: nothing after it is metadata.
      if (depth === 2 && inMetadata) return text;
      depth--;
      if (depth === 0) return text;
    }
  }
  return text;
}
