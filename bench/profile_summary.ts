/**
 * Where a CPU profile's time went, as text: self time by function and by file, and inclusive
 * time by function (a function's own samples and those of everything it called, each sample
 * counted once however deep the recursion). `deno run -A bench/profile_summary.ts F.cpuprofile`
 * prints it for a saved profile; `deno task bench --peer --cpu-profile` writes one per run.
 */
import type { CpuProfile } from "../testing/cpu_profile.ts";

interface Row {
  key: string;
  ms: number;
}

/** V8's pseudo-frames: time outside JavaScript. */
const PSEUDO = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

function shortUrl(url: string): string {
  if (!url) return "(native)";
  const i = url.lastIndexOf("/main/");
  const npm = url.indexOf("/node_modules/");
  if (npm >= 0) return url.slice(npm + 14);
  const ext = url.indexOf("ext:");
  if (ext >= 0) return url.slice(ext);
  return i >= 0
    ? url.slice(i + 6)
    : url.replace(/^file:\/\/\/.*?\/(runtime|controllers|api)\//, "$1/");
}

function frameKey(f: CpuProfile["nodes"][number]["callFrame"]): string {
  if (PSEUDO.has(f.functionName)) return f.functionName;
  return `${f.functionName || "(anonymous)"} ${shortUrl(f.url)}:${f.lineNumber + 1}`;
}

function top(m: Map<string, number>, n: number): Row[] {
  return [...m].map(([key, ms]) => ({ key, ms })).sort((a, b) => b.ms - a.ms).slice(0, n);
}

/** Milliseconds of samples per node id (each sample's time is the delta that follows it). */
function sampleMs(p: CpuProfile): Map<number, number> {
  const ms = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
    ms.set(p.samples[i], (ms.get(p.samples[i]) ?? 0) + dt);
  }
  return ms;
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  byFunction: Row[];
  byFile: Row[];
  inclusive: Row[];
}

export function summarizeProfile(p: CpuProfile, n = 40): ProfileSummary {
  const own = sampleMs(p);
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const parent = new Map<number, number>();
  for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  const incl = new Map<string, number>();
  let totalMs = 0;
  let idleMs = 0;
  for (const [id, ms] of own) {
    const node = byId.get(id)!;
    const key = frameKey(node.callFrame);
    totalMs += ms;
    if (key === "(idle)") {
      idleMs += ms;
      continue;
    }
    fn.set(key, (fn.get(key) ?? 0) + ms);
    const f = PSEUDO.has(key) ? key : shortUrl(node.callFrame.url);
    file.set(f, (file.get(f) ?? 0) + ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const k = frameKey(byId.get(at)!.callFrame);
      if (k === "(root)" || seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + ms);
    }
  }
  return { totalMs, idleMs, byFunction: top(fn, n), byFile: top(file, n), inclusive: top(incl, n) };
}

export function formatProfileSummary(s: ProfileSummary): string {
  const busy = s.totalMs - s.idleMs;
  const table = (title: string, rows: Row[]) =>
    [
      `${title}:`,
      ...rows.map((r) =>
        `  ${(r.ms / 1000).toFixed(2).padStart(8)} s ${
          (100 * r.ms / busy).toFixed(1).padStart(5)
        } %  ${r.key}`
      ),
    ].join("\n");
  return [
    `sampled ${(s.totalMs / 1000).toFixed(1)} s, of which busy ${(busy / 1000).toFixed(1)} s ` +
    `(percentages are of busy)`,
    table("self time by function", s.byFunction),
    table("self time by file", s.byFile),
    table("inclusive time by function", s.inclusive),
  ].join("\n\n");
}

if (import.meta.main) {
  for (const path of Deno.args) {
    const p = JSON.parse(await Deno.readTextFile(path)) as CpuProfile;
    console.log(
      `# ${path}\n${formatProfileSummary(summarizeProfile(p, Number(Deno.env.get("TOP") ?? 40)))}`,
    );
  }
}
