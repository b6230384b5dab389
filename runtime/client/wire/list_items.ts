/**
 * The items of a list response read as they arrive. A list of every pod of a large cluster is
 * hundreds of megabytes of JSON: parsed whole, it is held twice at once (the text and every
 * untransformed object) before the cache keeps a fraction of it. Read here item by item, each is
 * parsed, transformed and its text dropped, and what is outside `items` (kind, apiVersion, the
 * list's metadata) is parsed at the end with `items` empty.
 *
 * Optionally each item's `metadata.managedFields` is cut from its text before it is parsed (left
 * as `[]`): often the largest part of an object, and parsing it only to drop it is most of what a
 * cache pays for its start-up.
 *
 * Scans characters, not bytes: the chunks are decoded as a stream (a UTF-8 sequence cut between
 * chunks is completed by the next one), and JSON's structure is ASCII, so only strings (their
 * quotes and escapes) need tracking.
 */

import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  closingQuote,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from "./json_scan.ts";

/** The text before a list's items array opens. */
const ITEMS_KEY = /"items"\s*:\s*$/;

/** Depths: 1 inside the list object, 2 inside `items`, 3 an item, 4 its metadata. */
const ITEM = 3;
const ITEM_FIELD = 4;

export class ListItemReader {
  readonly #dropManagedFields: boolean;
  #decoder = new TextDecoder();
  /** Text received and not yet handed on: the current item's beginning, if one is open. */
  #text = "";
  #depth = 0;
  #inString = false;
  #escaped = false;
  #inItems = false;
  /** Where the open item starts in `#text`, or -1. */
  #itemStart = -1;
  /** The list object outside its items, as text. */
  #rest = "";
  /** Where the string being read starts, when it may be a key of the item or its metadata. */
  #keyStart = -1;
  /** The last string read in the item's object and in its metadata (the key of what follows). */
  #itemKey = "";
  #metadataKey = "";
  #inMetadata = false;
  /** The managedFields array of the open item: where it opens, and its closing bracket. */
  #cutFrom = -1;
  #cutTo = -1;

  constructor(opts: { dropManagedFields?: boolean } = {}) {
    this.#dropManagedFields = opts.dropManagedFields ?? false;
  }

  /** Feeds the next chunk of the body; returns the items it completed, as JSON text each. */
  push(chunk: Uint8Array): string[] {
    const text = this.#text + this.#decoder.decode(chunk, { stream: true });
    const items: string[] = [];
    const keys = this.#dropManagedFields;
    // Scanning resumes after what the previous chunks left: the open item's text, if any.
    let i = this.#itemStart >= 0 ? this.#text.length : 0;
    let restFrom = this.#inItems ? -1 : 0;
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === BACKSLASH) this.#escaped = true;
        else if (c === QUOTE) {
          this.#inString = false;
          if (this.#keyStart >= 0) {
            const key = text.slice(this.#keyStart, i);
            if (this.#depth === ITEM) this.#itemKey = key;
            else this.#metadataKey = key;
            this.#keyStart = -1;
          }
        }
        continue;
      }
      if (c === QUOTE) {
        const isKey = keys && this.#inItems &&
          (this.#depth === ITEM || (this.#depth === ITEM_FIELD && this.#inMetadata));
        // Most of a list's text is inside strings: jump to the closing quote (indexOf runs far
        // faster than this loop). A string that goes on past this chunk is read one character
        // at a time, as above.
        const end = closingQuote(text, i + 1);
        if (end < 0) {
          this.#inString = true;
          if (isKey) this.#keyStart = i + 1;
          continue;
        }
        if (isKey) {
          const key = text.slice(i + 1, end);
          if (this.#depth === ITEM) this.#itemKey = key;
          else this.#metadataKey = key;
        }
        i = end;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        this.#depth++;
        if (!this.#inItems) {
          if (this.#depth === 2 && c === OPEN_BRACKET && restFrom >= 0) {
            const before = this.#rest + text.slice(restFrom, i);
            if (ITEMS_KEY.test(before)) {
              this.#inItems = true;
              this.#rest = before + "[";
              restFrom = -1;
            }
          }
        } else if (this.#depth === ITEM) {
          this.#itemStart = i;
          this.#itemKey = "";
        } else if (this.#depth === ITEM_FIELD) {
          this.#inMetadata = keys && c === OPEN_BRACE && this.#itemKey === "metadata";
          this.#metadataKey = "";
        } else if (
          this.#depth === ITEM_FIELD + 1 && this.#inMetadata && c === OPEN_BRACKET &&
          this.#metadataKey === "managedFields"
        ) {
          this.#cutFrom = i;
        }
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (this.#inItems) {
          if (this.#depth === ITEM) {
            items.push(this.#itemText(text, i));
            this.#itemStart = -1;
          } else if (this.#depth === 2) {
            this.#inItems = false;
            restFrom = i;
          } else if (this.#depth === ITEM_FIELD) {
            this.#inMetadata = false;
          } else if (this.#depth === ITEM_FIELD + 1 && this.#cutFrom >= 0 && this.#cutTo < 0) {
            this.#cutTo = i;
          }
        }
        this.#depth--;
      }
    }
    if (restFrom >= 0) this.#rest += text.slice(restFrom);
    if (this.#itemStart >= 0) {
      // The open item's text is kept; positions in it move with it.
      const from = this.#itemStart;
      this.#text = text.slice(from);
      this.#itemStart = 0;
      if (this.#keyStart >= 0) this.#keyStart -= from;
      if (this.#cutFrom >= 0) this.#cutFrom -= from;
      if (this.#cutTo >= 0) this.#cutTo -= from;
    } else {
      this.#text = "";
    }
    return items;
  }

  /** The list object with `items` empty, once the body has ended. */
  finish(): Record<string, unknown> {
    this.#rest += this.#decoder.decode();
    if (this.#depth !== 0 || this.#inString || this.#rest.trim() === "") {
      throw new SyntaxError("the list's body ended early");
    }
    return JSON.parse(this.#rest);
  }

  /** The item ending at `end`, its managedFields array (if cut) left empty. */
  #itemText(text: string, end: number): string {
    const from = this.#cutFrom;
    const to = this.#cutTo;
    this.#cutFrom = this.#cutTo = -1;
    if (from < 0 || to < 0) return text.slice(this.#itemStart, end + 1);
    return text.slice(this.#itemStart, from) + "[]" + text.slice(to + 1, end + 1);
  }
}
