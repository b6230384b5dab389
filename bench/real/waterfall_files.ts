/** What `bench --real` writes of its waterfalls: the runs and the table, and the pictures. */
import { join } from "node:path";
import { medianRun, type WaterfallRun, waterfallTable, waterfallText } from "./waterfall.ts";
import { waterfallSvg } from "./waterfall_svg.ts";

/**
 * `<day>-real-waterfall.json` (every run's pods' stamps and the medians), `.txt` (the table) and a
 * picture per contender and size of its median run (`-real-waterfall-<contender>-<size>.svg`); the
 * files written and the table's text.
 */
export async function writeWaterfalls(
  out: string,
  day: string,
  waterfalls: readonly WaterfallRun[],
  sizes: readonly number[],
  contenders: readonly string[],
  runs: number,
  load: string,
): Promise<{ files: string[]; text: string }> {
  const rows = waterfallTable(waterfalls, sizes, contenders);
  const text = `real nodes, ${runs} runs per size and contender (load ${load}); medians of the ` +
    `runs, seconds: each phase's median pod / the last pod's end of it from the create\n` +
    waterfallText(rows) + "\n";
  const base = join(out, `${day}-real-waterfall`);
  const written = [`${base}.json`, `${base}.txt`];
  await Deno.writeTextFile(`${base}.txt`, text);
  await Deno.writeTextFile(
    `${base}.json`,
    JSON.stringify({ runs: waterfalls, medians: rows, loadAverage: load }, null, 2) + "\n",
  );
  for (const size of sizes) {
    for (const contender of contenders) {
      const shown = medianRun(
        waterfalls.filter((w) => w.size === size && w.contender === contender),
      );
      if (!shown) continue;
      const svg = `${base}-${contender}-${size}.svg`;
      written.push(svg);
      await Deno.writeTextFile(
        svg,
        waterfallSvg(
          shown,
          `${contender}, ${size} brokers on two real nodes (run ${shown.run + 1} of ${runs})`,
        ),
      );
    }
  }
  return { files: written, text };
}
