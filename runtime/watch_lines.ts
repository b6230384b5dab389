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

/**
 * A promise that rejects when `signal` aborts (never otherwise), and how to stop listening. A read
 * of a watch stream is raced with it: after 1,000 MiniClusters, aborting the fetch of a quiet
 * watch left its pending read unsettled for 20 s, and the process alive with it.
 */
export function abortedPromise(signal?: AbortSignal): { promise: Promise<never>; dispose(): void } {
  if (!signal) return { promise: new Promise<never>(() => {}), dispose: () => {} };
  let onAbort = () => {};
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason ?? new DOMException("aborted", "AbortError"));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  promise.catch(() => {}); // observed through the race; never an unhandled rejection
  return { promise, dispose: () => signal.removeEventListener("abort", onAbort) };
}
