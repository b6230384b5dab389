/** The wire format of a watch: newline-delimited JSON events, cut anywhere by HTTP framing. */
import { ApiError, type Status } from "./errors.ts";
import type { WatchEvent } from "./api_client.ts";
import { resourceName, type ResourceType } from "./resources.ts";

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
    return parts.map((l) => l.replace(/\r$/, "")).filter((l) => l.trim() !== "");
  }

  /** The last line when the stream ended without a newline. */
  flush(): string | undefined {
    const rest = (this.#partial + this.#decoder.decode()).trim();
    this.#partial = "";
    return rest === "" ? undefined : rest;
  }
}

/** One line of a watch stream → an event; ERROR events become thrown `ApiError`s. */
export function parseWatchLine<T>(line: string, rt?: ResourceType): WatchEvent<T> {
  let event: { type?: string; object?: unknown };
  try {
    event = JSON.parse(line);
  } catch {
    throw new Error(`malformed watch event: ${line.slice(0, 200)}`);
  }
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
