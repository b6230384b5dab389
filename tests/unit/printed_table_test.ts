// The tables the docs show for `kubectl get minicluster` are what kubectl prints: the CRD's
// default printer columns (those of priority 1 only appear with `-o wide`), integers where the
// column is an integer. tests/printed_table.ts reads them; tests/e2e/kueue_tutorial_test.ts
// compares docs/kueue.md's with the live cluster's.
import assert from "node:assert/strict";
import { parse } from "yaml";
import { parseTable, tableDifferences, tablesOf } from "../printed_table.ts";

const ROOT = new URL("../../", import.meta.url);

interface PrinterColumn {
  name: string;
  type: string;
  priority?: number;
}

/** The header `kubectl get minicluster` prints, and which of its columns are integers. */
function defaultColumns(): { header: string[]; integers: string[] } {
  const crd = parse(Deno.readTextFileSync(new URL("crds/minicluster.yaml", ROOT)));
  const columns = (crd.spec.versions[0].additionalPrinterColumns as PrinterColumn[])
    .filter((c) => (c.priority ?? 0) === 0);
  return {
    header: ["NAME", ...columns.map((c) => c.name.toUpperCase())],
    integers: columns.filter((c) => c.type === "integer").map((c) => c.name.toUpperCase()),
  };
}

/** Pages of the repository a user reads: the README, docs/, and the examples' comments. */
function pages(): { path: string; text: string }[] {
  const dir = (d: string, ext: string) =>
    [...Deno.readDirSync(new URL(d, ROOT))]
      .filter((e) => e.isFile && e.name.endsWith(ext))
      .map((e) => `${d}${e.name}`);
  return ["README.md", ...dir("docs/", ".md"), ...dir("examples/", ".yaml")]
    .map((path) => ({ path, text: Deno.readTextFileSync(new URL(path, ROOT)) }));
}

Deno.test("printed table: cells run from their column's start to the next one's", () => {
  const table = parseTable(
    "NAME     SIZE   READY   STATUS                AGE\n" +
      "first    2      2       PodsReady             8s\n" +
      "second   2      0       WaitingForAdmission   8s\n",
  );
  assert.deepEqual(table.header, ["NAME", "SIZE", "READY", "STATUS", "AGE"]);
  assert.deepEqual(table.rows[1], {
    NAME: "second",
    SIZE: "2",
    READY: "0",
    STATUS: "WaitingForAdmission",
    AGE: "8s",
  });
});

Deno.test("printed table: differences by header, row and cell, names mapped", () => {
  const shown = parseTable("NAME  READY  AGE\na     2      1s\nb     0      1s\n");
  const same = parseTable("NAME  READY  AGE\nb     2      9m\na     0      9m\n");
  assert.deepEqual(
    tableDifferences(shown, same, { names: { a: "b", b: "a" }, ignore: ["AGE"] }),
    [],
  );
  assert.deepEqual(tableDifferences(shown, same, { ignore: ["AGE"] }), [
    "a READY: shown 2, printed 0",
    "b READY: shown 0, printed 2",
  ]);
  const wide = parseTable("NAME  READY  MAX  AGE\na     2      2    1s\nc     0      2    1s\n");
  assert.deepEqual(tableDifferences(shown, wide, { ignore: ["AGE"] }), [
    "header: shown NAME READY AGE, printed NAME READY MAX AGE",
    "rows: shown a b, printed a c",
  ]);
});

Deno.test("printed table: every `kubectl get minicluster` table of the docs has the default columns", () => {
  const { header, integers } = defaultColumns();
  let tables = 0;
  for (const { path, text } of pages()) {
    for (const table of tablesOf(text, "kubectl get minicluster")) {
      tables++;
      assert.deepEqual(
        table.header,
        header,
        `${path}: a table with columns kubectl does not print`,
      );
      for (const row of table.rows) {
        for (const column of integers) {
          assert.match(row[column], /^\d+$/, `${path}: ${row.NAME}'s ${column} is not an integer`);
        }
      }
    }
  }
  assert.ok(tables >= 2, `only ${tables} tables found: docs/kueue.md shows two`);
});

Deno.test("printed table: no page says READY n/m, which the integer column never prints", () => {
  for (const { path, text } of pages()) {
    const m = /READY\s+\d+\/\d+/.exec(text);
    assert.ok(m === null, `${path}: "${m?.[0]}"`);
  }
});
