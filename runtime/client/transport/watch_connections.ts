/**
 * Connections for watches, apart from the one ordinary requests use.
 *
 * Over HTTP/2 every request is a stream of one connection, and the API server allows a connection
 * only so many concurrent streams (`--http2-max-streams-per-connection`, 250 by default, 100 on
 * some servers and proxies). A watch holds its stream for minutes. With `--namespaces` listing ~40
 * namespaces the operator holds ~6 watches a namespace: on one connection they took every stream,
 * and the reads and writes of reconciles queued behind them forever. So watches go to a pool of
 * their own connections, each carrying at most `WATCHES_PER_CONNECTION`, and ordinary requests keep
 * a connection no watch can fill.
 */

/** Well under the smallest stream limit seen in practice (100). */
export const WATCHES_PER_CONNECTION = 50;

interface Slot {
  client: Deno.HttpClient;
  watches: number;
}

export class WatchConnections {
  readonly #slots: Slot[] = [];
  #closed = false;

  constructor(
    readonly create: () => Deno.HttpClient,
    readonly perConnection = WATCHES_PER_CONNECTION,
  ) {}

  /** A client for one more watch; `release()` it when the watch ends. */
  acquire(): { client: Deno.HttpClient; release: () => void } {
    if (this.#closed) throw new Error("KubeClient is closed");
    let slot = this.#slots.find((s) => s.watches < this.perConnection);
    if (!slot) {
      slot = { client: this.create(), watches: 0 };
      this.#slots.push(slot);
    }
    slot.watches++;
    let released = false;
    const s = slot;
    return {
      client: slot.client,
      release: () => {
        if (released) return;
        released = true;
        s.watches--;
      },
    };
  }

  /** How many connections the pool holds (tests, metrics). */
  get size(): number {
    return this.#slots.length;
  }

  close(): void {
    this.#closed = true;
    for (const s of this.#slots.splice(0)) s.client.close();
  }
}
