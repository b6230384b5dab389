// A dependency-free SVG line chart, enough for latency CDFs and memory curves. Pure.

export interface Series {
  label: string;
  /** [x, y] points, drawn in the given order. */
  points: [number, number][];
}

export interface ChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  width?: number;
  height?: number;
  /** Y axis range; default [0, max of the data]. */
  yMax?: number;
  /** Draw each series as steps (a CDF) instead of straight segments. */
  steps?: boolean;
}

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"];

/** XML-escapes text content and attribute values. */
export function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;",
  );
}

/** "Nice" tick values covering [0, max]: steps of 1, 2 or 5 times a power of ten. */
export function niceTicks(max: number, target = 5): number[] {
  if (!(max > 0) || !Number.isFinite(max)) return [0, 1];
  const raw = max / target;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const ticks: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks[ticks.length - 1] < max) ticks.push(Number((ticks.length * step).toPrecision(12)));
  return ticks;
}

/** The empirical CDF of samples as points: (value, fraction of samples ≤ value). */
export function cdfPoints(samples: readonly number[]): [number, number][] {
  const sorted = [...samples].filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.map((v, i) => [v, (i + 1) / sorted.length]);
}

export function lineChart(series: readonly Series[], opts: ChartOptions): string {
  const width = opts.width ?? 720;
  const height = opts.height ?? 420;
  const m = { left: 64, right: 180, top: 40, bottom: 52 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const xTicks = niceTicks(Math.max(0, ...xs.filter(Number.isFinite)));
  const yTicks = niceTicks(opts.yMax ?? Math.max(0, ...ys.filter(Number.isFinite)));
  const xMax = xTicks[xTicks.length - 1];
  const yMax = yTicks[yTicks.length - 1];
  const sx = (x: number) => m.left + (x / xMax) * plotW;
  const sy = (y: number) => m.top + plotH - (y / yMax) * plotH;
  const f = (n: number) => n.toFixed(1);

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${m.left}" y="22" font-size="15" font-weight="bold">${escapeXml(opts.title)}</text>`,
  );
  for (const t of xTicks) {
    out.push(
      `<line x1="${f(sx(t))}" y1="${m.top}" x2="${f(sx(t))}" y2="${m.top + plotH}" stroke="#eee"/>`,
      `<text x="${f(sx(t))}" y="${m.top + plotH + 16}" text-anchor="middle">${t}</text>`,
    );
  }
  for (const t of yTicks) {
    out.push(
      `<line x1="${m.left}" y1="${f(sy(t))}" x2="${m.left + plotW}" y2="${
        f(sy(t))
      }" stroke="#eee"/>`,
      `<text x="${m.left - 6}" y="${f(sy(t) + 4)}" text-anchor="end">${t}</text>`,
    );
  }
  out.push(
    `<rect x="${m.left}" y="${m.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#888"/>`,
    `<text x="${m.left + plotW / 2}" y="${height - 12}" text-anchor="middle">${
      escapeXml(opts.xLabel)
    }</text>`,
    `<text transform="translate(16 ${m.top + plotH / 2}) rotate(-90)" text-anchor="middle">${
      escapeXml(opts.yLabel)
    }</text>`,
  );
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (pts.length > 0) {
      const d: string[] = [];
      pts.forEach(([x, y], j) => {
        if (j === 0) d.push(`M${f(sx(x))} ${f(sy(opts.steps ? 0 : y))}`);
        if (opts.steps) d.push(`H${f(sx(x))}`, `V${f(sy(y))}`);
        else d.push(`${j === 0 ? "L" : "L"}${f(sx(x))} ${f(sy(y))}`);
      });
      out.push(
        `<path d="${d.join(" ")}" fill="none" stroke="${color}" stroke-width="2">` +
          `<title>${escapeXml(s.label)}</title></path>`,
      );
    }
    const ly = m.top + 8 + i * 20;
    out.push(
      `<line x1="${m.left + plotW + 12}" y1="${ly}" x2="${m.left + plotW + 32}" y2="${ly}" ` +
        `stroke="${color}" stroke-width="2"/>`,
      `<text x="${m.left + plotW + 38}" y="${ly + 4}">${escapeXml(s.label)}</text>`,
    );
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}
