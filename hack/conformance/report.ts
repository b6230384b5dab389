/**
 * Classification of the differences against the allow-list, and the suite's report: the
 * manifests compared, the differences by class (with the line of docs/differences.md that
 * documents each), the run time, and every failure: a difference no entry allows, an entry whose
 * differences or guide text is missing, an entry that matched nothing (full runs only).
 */
import { ALLOW_LIST, type AllowEntry, type ManifestContext } from "./allow_list.ts";
import type { Difference } from "./compare.ts";

export interface Classified extends Difference {
  /** The allow-list entry that allows it; undefined: not allowed. */
  entry?: string;
  class?: string;
}

export interface Anchors {
  /** docs/differences.md, the list of the deliberate differences from the Go Flux Operator. */
  differences: string;
  guide: string;
}

/** Lines joined as one text, each line's indentation replaced by one space (so wrapped text matches). */
function flatten(lines: string[]): string {
  return lines.map((l, i) => (i === 0 ? "" : " ") + l.trimStart()).join("");
}

/**
 * The line (1-based) of docs/differences.md where `anchor` starts, or undefined. Anchors may wrap
 * across lines.
 */
export function differencesLine(anchors: Anchors, anchor: string): number | undefined {
  const lines = anchors.differences.split("\n");
  const at = flatten(lines).indexOf(anchor);
  if (at < 0) return undefined;
  let length = 0;
  for (let i = 0; i < lines.length; i++) {
    length += (i === 0 ? 0 : 1) + lines[i].trimStart().length;
    if (length > at) return i + 1;
  }
  return undefined;
}

export function classify(
  differences: Difference[],
  contexts: Map<string, ManifestContext>,
  entries: AllowEntry[] = ALLOW_LIST,
): Classified[] {
  return differences.map((d) => {
    const entry = entries.find((e) => e.matches(d, contexts.get(d.manifest)));
    return entry ? { ...d, entry: entry.id, class: entry.class } : { ...d };
  });
}

/** Entries whose docs/differences.md or guide text is missing. */
export function missingAnchors(anchors: Anchors, entries: AllowEntry[] = ALLOW_LIST): string[] {
  const problems: string[] = [];
  const guide = flatten(anchors.guide.split("\n"));
  for (const e of entries) {
    if (differencesLine(anchors, e.differences) === undefined) {
      problems.push(`${e.id}: docs/differences.md does not say "${e.differences}"`);
    }
    if (!guide.includes(e.guide)) {
      problems.push(`${e.id}: docs/migrating-from-go.md does not say "${e.guide}"`);
    }
  }
  return problems;
}

export interface ReportInput {
  manifests: { id: string; admissionOnly: boolean }[];
  /** Manifests both operators built children for (the others: one side refused or failed). */
  built: number;
  seconds: number;
  phases: string;
  verbose: boolean;
  /** Some manifests were left out (--only): unused entries are not an error then. */
  filtered: boolean;
  anchors: Anchors;
}

const short = (v: unknown) => {
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return text === undefined ? "(absent)" : text.length > 160 ? `${text.slice(0, 157)}...` : text;
};

/** Prints the report to stdout; returns the exit code. */
export function report(classified: Classified[], input: ReportInput): number {
  const out: string[] = [];
  const admissionOnly = input.manifests.filter((m) => m.admissionOnly).length;
  out.push("Conformance with the Go Flux Operator");
  out.push(
    `  manifests compared: ${input.manifests.length} (${
      input.manifests.length - admissionOnly
    } run by both operators, ${input.built} of them built by both; ${admissionOnly} invalid fixtures for admission only)`,
  );
  // The manifests themselves, wrapped: what "compared" covered.
  let line = "   ";
  for (const m of input.manifests) {
    if (line.length + m.id.length + 1 > 100) {
      out.push(line);
      line = "   ";
    }
    line += ` ${m.id}`;
  }
  out.push(line);
  const allowed = classified.filter((d) => d.entry);
  const refused = classified.filter((d) => !d.entry);
  out.push(
    `  differences: ${classified.length}, ${allowed.length} allowed, ${refused.length} not allowed`,
  );
  const byKind = new Map<string, number>();
  for (const d of classified) byKind.set(d.kind, (byKind.get(d.kind) ?? 0) + 1);
  out.push(`  by kind: ${[...byKind].map(([k, n]) => `${k} ${n}`).join(", ")}`);

  out.push("  by class (allow-list entry: differences, manifests; line of docs/differences.md):");
  const byEntry = new Map<string, Classified[]>();
  for (const d of allowed) byEntry.set(d.entry!, [...(byEntry.get(d.entry!) ?? []), d]);
  const problems: string[] = [];
  for (const e of ALLOW_LIST) {
    const found = byEntry.get(e.id) ?? [];
    const manifests = new Set(found.map((d) => d.manifest)).size;
    const line = differencesLine(input.anchors, e.differences);
    out.push(
      `    ${e.class.padEnd(11)} ${e.id.padEnd(24)} ${String(found.length).padStart(5)} ${
        String(manifests).padStart(3)
      }  docs/differences.md:${line ?? "?"}`,
    );
    if (found.length === 0 && !input.filtered) {
      problems.push(`allow-list entry ${e.id} matches no difference any more: remove it`);
    }
  }
  problems.push(...missingAnchors(input.anchors));
  out.push(`  run time: ${input.seconds.toFixed(1)} s (${input.phases})`);

  if (input.verbose) {
    out.push("", "Allowed differences:");
    for (const d of allowed) {
      out.push(
        `  [${d.entry}] ${d.manifest} ${d.object} ${d.path}: Go ${short(d.go)} | ours ${
          short(d.ours)
        }`,
      );
    }
  }
  if (refused.length > 0 || problems.length > 0) {
    out.push("", "FAILED:");
    for (const p of problems) out.push(`  ${p}`);
    for (const d of refused) {
      out.push(
        `  not allowed: ${d.manifest} ${d.kind} ${d.object} ${d.path}\n      Go:   ${
          short(d.go)
        }\n      ours: ${short(d.ours)}`,
      );
    }
  } else {
    out.push("", "PASSED: every difference is on the allow-list and documented.");
  }
  console.log(out.join("\n"));
  return refused.length > 0 || problems.length > 0 ? 1 : 0;
}
