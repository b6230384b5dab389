/**
 * What the client reads of an HTTP answer, whichever transport carried it: Deno's `fetch` or the
 * minimal HTTP/1.1 client (transport/http1.ts).
 */
import type { Http1Response, Http1Stream } from "./transport/http1.ts";
import { abortableReads } from "./watch_lines.ts";

export interface Answer {
  readonly status: number;
  readonly ok: boolean;
  /** The whole body as text. */
  text(): Promise<string>;
  /**
   * The body's bytes as they come. Ends quietly when `signal` aborts, even in the middle of a read;
   * leaving the loop early releases the body.
   */
  chunks(signal?: AbortSignal): AsyncIterable<Uint8Array>;
}

const ok = (status: number) => status >= 200 && status < 300;

/** A `fetch` Response as an Answer. */
export function fetchAnswer(response: Response): Answer {
  return {
    status: response.status,
    ok: response.ok,
    text: () => response.text(),
    async *chunks(signal?: AbortSignal) {
      const reader = response.body?.getReader();
      if (!reader) return;
      const reads = abortableReads(signal);
      try {
        while (true) {
          let chunk: ReadableStreamReadResult<Uint8Array>;
          try {
            chunk = await reads.read(reader.read());
          } catch (e) {
            if (signal?.aborted) return;
            throw e;
          }
          if (chunk.done) return;
          yield chunk.value;
        }
      } finally {
        // Not awaited: a cancel that never settles (a stream torn down by the abort) must not keep
        // the consumer's loop from ending.
        reader.cancel().catch(() => {});
        reads.dispose();
      }
    },
  };
}

/** An answer read whole by the HTTP/1.1 client. */
export function http1WholeAnswer(response: Http1Response): Answer {
  const bytes = new TextEncoder().encode(response.text);
  return {
    status: response.status,
    ok: ok(response.status),
    text: () => Promise.resolve(response.text),
    async *chunks() {
      if (bytes.length) yield bytes;
    },
  };
}

/** An answer the HTTP/1.1 client reads as it comes; its connection closes when it ends. */
export function http1StreamAnswer(stream: Http1Stream): Answer {
  const chunks = async function* (signal?: AbortSignal) {
    const onAbort = () => stream.close();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const bytes of stream.body) {
        if (signal?.aborted) return;
        yield bytes;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      stream.close();
    }
  };
  return {
    status: stream.status,
    ok: ok(stream.status),
    async text() {
      const decoder = new TextDecoder();
      let text = "";
      for await (const bytes of chunks()) text += decoder.decode(bytes, { stream: true });
      return text + decoder.decode();
    },
    chunks,
  };
}
