/** The wire format of a watch: newline-delimited JSON events, cut anywhere by HTTP framing. */
import { ApiError, type Status } from "./errors.ts";
import type { WatchEvent } from "./api_client.ts";
import { resourceName, type ResourceType } from "./resources.ts";
import { withoutManagedFields } from "./wire/managed_fields.ts";

/**
 * Splits a byte stream into lines, keeping a partial line (and a partial UTF-8 sequence) across
 * chunks: the API server flushes one JSON event per line but TCP/HTTP framing cuts anywhere.
 */
export class LineBuffer {
  #decoder = new TextDecoder();
  #partial = "";

  /** Feeds a chunk; returns the complete, non-blank lines it finished. */
  push(chunk: Uint8Array | string): string[] {
    const text = typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true });
    const parts = (this.#partial + text).split("\n");
    this.#partial = parts.pop()!;
    const lines: string[] = [];
    for (const part of parts) {
      const line = part.endsWith("\r") ? part.slice(0, -1) : part;
      if (line.trim() !== "") lines.push(line);
    }
    return lines;
  }

  /** The last line when the stream ended without a newline. */
  flush(): string | undefined {
    const rest = (this.#partial + this.#decoder.decode()).trim();
    this.#partial = "";
    return rest === "" ? undefined : rest;
  }
}

/** `text` (all or part of the watch line `line`) parsed; an error names the line. */
function parsedLine<T>(text: string, line: string): T {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`malformed watch event: ${line.slice(0, 200)}`);
  }
}

/** One line of a watch stream → an event; ERROR events become thrown `ApiError`s. */
export function parseWatchLine<T>(line: string, rt?: ResourceType): WatchEvent<T> {
  const event = parsedLine<{ type?: string; object?: unknown }>(line, line);
  if (event.type === "ERROR") {
    const status = (event.object ?? {}) as Status;
    throw new ApiError(status, `watch ${rt ? resourceName(rt) : ""}`.trim());
  }
  if (
    event.type !== "ADDED" && event.type !== "MODIFIED" && event.type !== "DELETED" &&
    event.type !== "BOOKMARK"
  ) {
    throw new Error(`unknown watch event type ${JSON.stringify(event.type)}`);
  }
  return event as WatchEvent<T>;
}

/** How the API server begins a line of an added or modified object (type, then object). */
const OBJECT_PREFIXES = [
  { type: "ADDED", prefix: '{"type":"ADDED","object":' },
  { type: "MODIFIED", prefix: '{"type":"MODIFIED","object":' },
] as const;

/** The type and the object's text of a watch line of an added or modified object. */
export function watchedObject(
  line: string,
): { type: "ADDED" | "MODIFIED"; text: string } | undefined {
  if (!line.endsWith("}")) return undefined;
  for (const { type, prefix } of OBJECT_PREFIXES) {
    if (line.startsWith(prefix)) return { type, text: line.slice(prefix.length, -1) };
  }
  return undefined;
}

/** How the lines of a watch are read into events. */
export interface WatchLineOptions {
  /** Objects come with `metadata.managedFields` empty: cut from their text, never parsed. */
  dropManagedFields?: boolean;
  /** Each added or modified object's text with the object (echoed_answers.ts). */
  parsed?: (objectText: string, object: unknown) => void;
}

/**
 * One line of a watch stream → an event. The object of an added or modified one is parsed from
 * its own text (with `metadata.managedFields` cut from it first when `dropManagedFields`), which
 * `parsed` receives with the object; any other line is read whole (parseWatchLine).
 */
export function watchLineEvent<T>(
  line: string,
  rt: ResourceType,
  opts: WatchLineOptions = {},
): WatchEvent<T> {
  const watched = watchedObject(line);
  if (watched === undefined) return parseWatchLine<T>(line, rt);
  const text = opts.dropManagedFields ? withoutManagedFields(watched.text) : watched.text;
  const object = parsedLine<T>(text, line);
  opts.parsed?.(text, object);
  return { type: watched.type, object };
}

/**
 * Reads that end when `signal` aborts, even if the read itself never settles: after 1,000
 * primaries, aborting the fetch of a quiet watch left its pending read unsettled for 20 s, and
 * the process alive with it.
 *
 * Each read gets a promise of its own, rejected by the abort listener while it is the current
 * one. Racing every read against one long-lived promise instead leaks: each race leaves a
 * reaction on that promise which holds the chunk read, so a busy watch kept every byte it had
 * ever received (1 GiB after 1,000 primaries).
 */
export function abortableReads(
  signal?: AbortSignal,
): { read<T>(pending: Promise<T>): Promise<T>; dispose(): void } {
  let rejectCurrent: ((reason: unknown) => void) | undefined;
  const reason = () => signal?.reason ?? new DOMException("aborted", "AbortError");
  const onAbort = () => rejectCurrent?.(reason());
  signal?.addEventListener("abort", onAbort, { once: true });
  return {
    read<T>(pending: Promise<T>): Promise<T> {
      if (signal?.aborted) {
        pending.catch(() => {});
        return Promise.reject(reason());
      }
      return new Promise<T>((resolve, reject) => {
        rejectCurrent = reject;
        pending.then(resolve, reject).finally(() => {
          if (rejectCurrent === reject) rejectCurrent = undefined;
        });
      });
    },
    dispose() {
      rejectCurrent = undefined;
      signal?.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * The events of a watch response's body, from its bytes as they come (answer.ts `chunks`, which end
 * quietly when the watch's signal aborts).
 */
export async function* watchEvents<T>(
  chunks: AsyncIterable<Uint8Array>,
  rt: ResourceType,
  opts: WatchLineOptions = {},
): AsyncGenerator<WatchEvent<T>> {
  const lines = new LineBuffer();
  const eventOf = (line: string) => watchLineEvent<T>(line, rt, opts);
  for await (const chunk of chunks) {
    for (const line of lines.push(chunk)) yield eventOf(line);
  }
  const rest = lines.flush();
  if (rest !== undefined) yield eventOf(rest);
}
