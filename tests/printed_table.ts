/**
 * Tables as kubectl prints them (`kubectl get`: a header of column names, then one line per
 * object, each column starting where its name starts), read from a terminal's output or from the
 * console blocks of a page, and compared column by column. Pure.
 */

export interface PrintedTable {
  /** The column names, in order (NAME, SIZE, ...). */
  header: string[];
  /** One record per line, keyed by column name. */
  rows: Record<string, string>[];
}

/** Reads kubectl's aligned output: each cell runs from its column's start to the next one's. */
export function parseTable(text: string): PrintedTable {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  if (lines.length === 0) return { header: [], rows: [] };
  const starts = [...lines[0].matchAll(/\S+/g)].map((m) => ({ name: m[0], at: m.index! }));
  const rows = lines.slice(1).map((line) =>
    Object.fromEntries(starts.map(({ name, at }, i) => {
      const end = i + 1 < starts.length ? starts[i + 1].at : line.length;
      return [name, line.slice(at, end).trim()];
    }))
  );
  return { header: starts.map((s) => s.name), rows };
}

/**
 * The tables a page shows for `command`: in its console blocks, the lines after each
 * `$ <command>` line up to the next `$ ` line or the block's end, in the page's order.
 */
export function tablesOf(markdown: string, command: string): PrintedTable[] {
  const tables: PrintedTable[] = [];
  for (const block of markdown.matchAll(/```console\n([\s\S]*?)```/g)) {
    const lines = block[1].split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (lines[i] !== `$ ${command}`) continue;
      const end = lines.findIndex((l, j) => j > i && l.startsWith("$ "));
      tables.push(parseTable(lines.slice(i + 1, end === -1 ? undefined : end).join("\n")));
    }
  }
  return tables;
}

/**
 * How `live` differs from `shown`: the header, then every row by NAME (`names` maps a name on the
 * page to the live one), every column but `ignore`'s. Empty when they agree.
 */
export function tableDifferences(
  shown: PrintedTable,
  live: PrintedTable,
  opts: { names?: Record<string, string>; ignore?: string[] } = {},
): string[] {
  const out: string[] = [];
  if (shown.header.join(" ") !== live.header.join(" ")) {
    out.push(`header: shown ${shown.header.join(" ")}, printed ${live.header.join(" ")}`);
  }
  const liveName = (name: string) => opts.names?.[name] ?? name;
  const shownNames = shown.rows.map((r) => liveName(r.NAME)).sort();
  const liveNames = live.rows.map((r) => r.NAME).sort();
  if (shownNames.join(" ") !== liveNames.join(" ")) {
    out.push(`rows: shown ${shownNames.join(" ")}, printed ${liveNames.join(" ")}`);
  }
  for (const row of shown.rows) {
    const printed = live.rows.find((r) => r.NAME === liveName(row.NAME));
    if (!printed) continue;
    for (const column of shown.header) {
      if (column === "NAME" || opts.ignore?.includes(column)) continue;
      if (row[column] !== printed[column]) {
        out.push(`${row.NAME} ${column}: shown ${row[column]}, printed ${printed[column]}`);
      }
    }
  }
  return out;
}
