/**
 * The moments of a broker start-up read off the lead broker's log, as the container runtime
 * stamped each line (`kubectl logs --timestamps`: RFC 3339 with nanoseconds, the node's clock,
 * which on the local cluster is the bench's own). Polling `flux overlay status` from outside
 * would add an exec's latency and miss an instance that finished between two polls.
 */

/** One line of `kubectl logs --timestamps`. */
export interface StampedLine {
  /** Epoch milliseconds. */
  at: number;
  text: string;
}

export function parseStampedLog(out: string): StampedLine[] {
  const lines: StampedLine[] = [];
  for (const raw of out.split("\n")) {
    const space = raw.indexOf(" ");
    if (space < 0) continue;
    const at = Date.parse(raw.slice(0, space));
    if (Number.isNaN(at)) continue;
    lines.push({ at, text: raw.slice(space + 1) });
  }
  return lines;
}

/**
 * When every broker had joined: the lead broker logs its state machine's `quorum-full` event once
 * the brokers of its quorum (all of them, Flux's default) are online. Both operators run the
 * brokers at log level 6 unless `logging.quiet`, which is what prints it.
 */
export function quorumFullAt(lines: StampedLine[]): number | undefined {
  return lines.find((l) => /\bquorum-full\b/.test(l.text))?.at;
}

/** The first line a job printed: `hostname` on a broker's pod prints `<name>-<index>`. */
export function firstHostnameAt(lines: StampedLine[], name: string): number | undefined {
  const hostname = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-\\d+$`);
  return lines.find((l) => hostname.test(l.text.trim()))?.at;
}
