/**
 * A run's waterfall as SVG, dependency-free like bench/svg.ts: one row per pod in rank order, its
 * phases as colored bars on a shared time axis from the create, the instance's every-broker-joined
 * and first output as vertical lines. Pure.
 */
import { escapeXml, niceTicks } from "../svg.ts";
import { byIndex, type PhaseKey, PHASES, podSegments, type WaterfallRun } from "./waterfall.ts";

export const PHASE_COLORS: Readonly<Record<PhaseKey, string>> = {
  scheduled: "#c7c7c7",
  sandbox: "#9467bd",
  initStart: "#c5b0d5",
  initCopy: "#d62728",
  containersStart: "#ff7f0e",
  brokerUp: "#1f77b4",
  joined: "#2ca02c",
  firstOutput: "#17becf",
};

const ROW = 18;
const BAR = 12;

export function waterfallSvg(run: WaterfallRun, title: string): string {
  const pods = byIndex(run.pods);
  const rows = pods.map((p) => ({ pod: p, segments: podSegments(p, run) }));
  const rel = (t?: number) => t === undefined ? undefined : t - run.appliedAt;
  const marks = [
    { label: "every broker joined", ms: rel(run.quorumFullAt), dash: "6 3" },
    { label: "first output", ms: rel(run.firstOutputAt), dash: "2 2" },
  ].filter((m): m is { label: string; ms: number; dash: string } => m.ms !== undefined);
  const ends = [
    ...rows.flatMap((r) => r.segments.map((s) => s.endMs)),
    ...marks.map((m) => m.ms),
  ];
  const ticks = niceTicks(Math.max(0, ...ends) / 1000);
  const xMax = ticks[ticks.length - 1];

  const m = { left: 150, right: 170, top: 44, bottom: 48 };
  const plotW = 640;
  const plotH = Math.max(1, rows.length) * ROW;
  const width = m.left + plotW + m.right;
  // The legend may be taller than a few pods' rows.
  const height = m.top + Math.max(plotH, (PHASES.length + marks.length) * 18) + m.bottom;
  const sx = (ms: number) => m.left + (ms / 1000 / xMax) * plotW;
  const f = (n: number) => n.toFixed(1);

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${m.left}" y="24" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  for (const t of ticks) {
    const x = f(sx(t * 1000));
    out.push(
      `<line x1="${x}" y1="${m.top}" x2="${x}" y2="${m.top + plotH}" stroke="#eee"/>`,
      `<text x="${x}" y="${m.top + plotH + 16}" text-anchor="middle">${t}</text>`,
    );
  }
  out.push(
    `<text x="${m.left + plotW / 2}" y="${m.top + plotH + 36}" text-anchor="middle">` +
      `seconds from the create</text>`,
  );
  rows.forEach(({ pod, segments }, i) => {
    const y = m.top + i * ROW + (ROW - BAR) / 2;
    const label = `broker ${pod.index}${pod.node ? ` (${pod.node})` : ""}`;
    out.push(
      `<g class="pod" data-pod="${escapeXml(pod.pod)}">`,
      `<text x="${m.left - 6}" y="${f(y + BAR - 2)}" text-anchor="end">${escapeXml(label)}</text>`,
    );
    for (const s of segments) {
      const phase = PHASES.find((p) => p.key === s.phase)!;
      out.push(
        `<rect data-phase="${s.phase}" x="${f(sx(s.startMs))}" y="${f(y)}" ` +
          `width="${f(Math.max(0, sx(s.endMs) - sx(s.startMs)))}" height="${BAR}" ` +
          `fill="${PHASE_COLORS[s.phase]}"><title>${escapeXml(phase.label)}: ${
            ((s.endMs - s.startMs) / 1000).toFixed(2)
          } s, to ${(s.endMs / 1000).toFixed(2)} s</title></rect>`,
      );
    }
    out.push("</g>");
  });
  out.push(
    `<rect x="${m.left}" y="${m.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#888"/>`,
  );
  for (const mark of marks) {
    const x = f(sx(mark.ms));
    out.push(
      `<line class="mark" x1="${x}" y1="${m.top - 4}" x2="${x}" y2="${m.top + plotH}" ` +
        `stroke="black" stroke-dasharray="${mark.dash}"><title>${escapeXml(mark.label)}: ${
          (mark.ms / 1000).toFixed(2)
        } s</title></line>`,
    );
  }
  const legend = [
    ...PHASES.map((p) => ({ label: p.label, color: PHASE_COLORS[p.key], dash: "" })),
    ...marks.map((mk) => ({ label: mk.label, color: "", dash: mk.dash })),
  ];
  legend.forEach((l, i) => {
    const x = m.left + plotW + 14;
    const y = m.top + i * 18;
    out.push(
      l.dash
        ? `<line x1="${x}" y1="${y + 6}" x2="${x + 14}" y2="${y + 6}" stroke="black" ` +
          `stroke-dasharray="${l.dash}"/>`
        : `<rect x="${x}" y="${y}" width="14" height="12" fill="${l.color}"/>`,
      `<text x="${x + 20}" y="${y + 10}">${escapeXml(l.label)}</text>`,
    );
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}
