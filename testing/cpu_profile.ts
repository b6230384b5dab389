// V8's sampling CPU profiler of an operator process, over the inspector protocol. Deno has no
// `--cpu-prof`; a process started with `--inspect=127.0.0.1:0` prints the inspector's WebSocket
// address on stderr, and the Profiler domain then starts and stops a profile on request, so a
// benchmark can profile exactly the span it measures (not start-up, not the idle window).

/** A `.cpuprofile` (the format Chrome's DevTools and speedscope open). */
export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
    hitCount?: number;
    children?: number[];
  }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The inspector's address in a line of Deno's stderr ("Debugger listening on ws://..."). */
export function inspectorUrl(line: string): string | undefined {
  return /Debugger listening on (ws:\/\/\S+)/.exec(line)?.[1];
}

/** One inspector session that runs the Profiler domain. */
export class CpuProfiler {
  readonly #ws: WebSocket;
  #next = 1;
  readonly #pending = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void }>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = (e) => {
      const msg = JSON.parse(String(e.data));
      const p = msg.id === undefined ? undefined : this.#pending.get(msg.id);
      if (!p) return; // an event of a domain we did not enable
      this.#pending.delete(msg.id);
      if (msg.error) p.fail(new Error(`inspector: ${JSON.stringify(msg.error)}`));
      else p.ok(msg.result);
    };
  }

  static async connect(url: string): Promise<CpuProfiler> {
    const ws = new WebSocket(url);
    await new Promise<void>((ok, fail) => {
      ws.onopen = () => ok();
      ws.onerror = (e) => fail(new Error(`inspector ${url}: ${(e as ErrorEvent).message}`));
    });
    return new CpuProfiler(ws);
  }

  #call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((ok, fail) => {
      this.#pending.set(id, { ok: ok as (v: unknown) => void, fail });
      this.#ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /**
   * Starts sampling every `intervalUs` microseconds of the process's JavaScript thread. Deno also
   * reports every `fetch` to an attached inspector, and `Network.disable` did not stop that in
   * the operator (Deno 2.9.6): a profiled run costs more CPU than an unprofiled one.
   */
  async start(intervalUs = 1000): Promise<void> {
    await this.#call("Profiler.enable");
    await this.#call("Profiler.setSamplingInterval", { interval: intervalUs });
    await this.#call("Profiler.start");
  }

  async stop(): Promise<CpuProfile> {
    const { profile } = await this.#call<{ profile: CpuProfile }>("Profiler.stop");
    return profile;
  }

  close(): void {
    this.#ws.close();
  }
}
