/**
 * A write's answer taken from its watch echo. Every write comes back on the watch of its kind, and
 * the API server encodes the same stored object at the same resourceVersion the same way, byte for
 * byte. Measured on a real API server, the echo is read before the write's own answer most of the
 * time (both come at once; the answer passes through more of the client): the object parsed from
 * the watch then serves as the answer, and the answer's text, found equal, is not parsed again.
 * A controller that creates its children sees about half its watch events come back this way.
 *
 * Only while a write of a kind is in flight are that kind's watched objects kept, by their text,
 * and only an exact text is taken, so no answer differs from what parsing it would give. A watch
 * that cuts managedFields from its objects (wire/managed_fields.ts) keeps them by the cut text,
 * and an answer is then looked up cut the same way: its object comes with managedFields empty, as
 * the caches keep every object. Kept objects go when their kind has no write in flight, and past a
 * bound, oldest first.
 */
import { withoutManagedFields } from "./wire/managed_fields.ts";

/** Objects kept per kind at most (a burst of writes keeps the window open). */
const KEPT_PER_KIND = 512;

/** The resource a write's echo comes back on: a subresource's object is its resource's. */
export function echoResource(resource: string): string {
  const slash = resource.indexOf("/");
  return slash < 0 ? resource : resource.slice(0, slash);
}

export class EchoedAnswers {
  /** Writes in flight, by resource. */
  readonly #inFlight = new Map<string, number>();
  /** Objects watched while writes of their kind were in flight, by resource, then by text. */
  readonly #watched = new Map<string, Map<string, unknown>>();

  /** A write of `resource` was sent. */
  started(resource: string): void {
    this.#inFlight.set(resource, (this.#inFlight.get(resource) ?? 0) + 1);
  }

  /** A write of `resource` got its answer (or failed): with none left, nothing is kept. */
  finished(resource: string): void {
    const n = (this.#inFlight.get(resource) ?? 1) - 1;
    if (n > 0) {
      this.#inFlight.set(resource, n);
      return;
    }
    this.#inFlight.delete(resource);
    this.#watched.delete(resource);
  }

  /**
   * A watch of `resource` parsed the object `text` into `object` (an added or modified one): kept
   * while a write of it is in flight.
   */
  watched(resource: string, text: string, object: unknown): void {
    if (!this.#inFlight.has(resource)) return;
    let kept = this.#watched.get(resource);
    if (!kept) this.#watched.set(resource, kept = new Map());
    kept.set(text, object);
    if (kept.size > KEPT_PER_KIND) kept.delete(kept.keys().next().value!);
  }

  /** The object already parsed from exactly the answer `text` of a write of `resource`, once. */
  take(resource: string, text: string): unknown {
    const kept = this.#watched.get(resource);
    if (!kept?.size) return undefined;
    let answer = text.endsWith("\n") ? text.slice(0, -1) : text;
    let object = kept.get(answer);
    if (object === undefined) {
      answer = withoutManagedFields(answer);
      object = kept.get(answer);
    }
    if (object !== undefined) kept.delete(answer);
    return object;
  }

  /** Objects kept now (for tests). */
  get size(): number {
    let n = 0;
    for (const kept of this.#watched.values()) n += kept.size;
    return n;
  }
}
