// A reader of the Prometheus text format (0.0.4) as the operator's /metrics serves it: enough to
// count requests by label in tests and benchmarks. Pure; tested in tests/tooling/bench_stats_test.ts.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample line (comments and blank lines skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const sample = parseLine(line);
    if (sample) out.push(sample);
  }
  return out;
}

function parseLine(line: string): Sample | undefined {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line);
  if (!m) return undefined;
  const name = m[1];
  let pos = name.length;
  const labels: Record<string, string> = {};
  if (line[pos] === "{") {
    pos++;
    for (;;) {
      while (line[pos] === " " || line[pos] === ",") pos++;
      if (line[pos] === "}") {
        pos++;
        break;
      }
      const key = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(pos));
      if (!key || line[pos + key[0].length] !== "=" || line[pos + key[0].length + 1] !== '"') {
        return undefined;
      }
      pos += key[0].length + 2;
      let value = "";
      while (pos < line.length && line[pos] !== '"') {
        if (line[pos] === "\\") {
          const next = line[pos + 1];
          value += next === "n" ? "\n" : next;
          pos += 2;
        } else value += line[pos++];
      }
      if (line[pos] !== '"') return undefined;
      pos++;
      labels[key[0]] = value;
    }
  }
  const rest = line.slice(pos).trim().split(/\s+/);
  const value = parseValue(rest[0]);
  if (value === undefined) return undefined;
  return { name, labels, value };
}

function parseValue(s: string | undefined): number | undefined {
  if (s === undefined || s === "") return undefined;
  if (s === "+Inf") return Infinity;
  if (s === "-Inf") return -Infinity;
  if (s === "NaN") return NaN;
  const v = Number(s);
  return Number.isNaN(v) ? undefined : v;
}

/** Sum of the samples of `name` whose labels match every given label (a value list = any of). */
export function sumOf(
  samples: readonly Sample[],
  name: string,
  match: Record<string, string | readonly string[]> = {},
): number {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    const ok = Object.entries(match).every(([k, want]) =>
      typeof want === "string" ? s.labels[k] === want : want.includes(s.labels[k] ?? "")
    );
    if (ok) total += s.value;
  }
  return total;
}

/** Totals of `name` grouped by one label (e.g. api_requests_total by verb). */
export function groupBy(
  samples: readonly Sample[],
  name: string,
  label: string,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (s.name !== name) continue;
    const key = s.labels[label] ?? "";
    out[key] = (out[key] ?? 0) + s.value;
  }
  return out;
}

/** The verbs of api_requests_total that change something. */
export const WRITE_VERBS: readonly string[] = [
  "create",
  "update",
  "patch",
  "apply",
  "delete",
  "deletecollection",
];

/** The verbs that only read. */
export const READ_VERBS: readonly string[] = ["get", "list", "watch"];

/** The operator's writes so far, by its own api_requests_total counter. */
export function writeCount(samples: readonly Sample[]): number {
  return sumOf(samples, "api_requests_total", { verb: WRITE_VERBS });
}

/** Per-key difference b - a of two groupings (keys of either). */
export function diffCounts(
  a: Record<string, number>,
  b: Record<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    out[k] = (b[k] ?? 0) - (a[k] ?? 0);
  }
  return out;
}
