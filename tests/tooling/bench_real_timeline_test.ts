// The start-up moments `bench --real` reads off a lead broker's log, and how it orders and sums
// its runs.
import assert from "node:assert/strict";
import { firstHostnameAt, parseStampedLog, quorumFullAt } from "../../bench/real/timeline.ts";
import { rotation, summarize, table } from "../../bench/real/nodes.ts";

// As `kubectl logs --timestamps` prints a lead broker's log (level 6, job `hostname`).
const LOG = [
  "2026-11-27T04:10:01.100000000Z 👋 Hello, I'm real-ours-2-0",
  "2026-11-27T04:10:02.250000000Z Nov 27 04:10:02.249 broker.info[0]: start: none->join 0.5ms",
  "2026-11-27T04:10:03.500000000Z Nov 27 04:10:03.499 broker.info[0]: online: real-ours-2-[0-1] (ranks 0-1)",
  "2026-11-27T04:10:03.510000000Z Nov 27 04:10:03.509 broker.info[0]: quorum-full: quorum->run 1.2s",
  "2026-11-27T04:10:04.020000000Z real-ours-2-1",
  "2026-11-27T04:10:04.030000000Z real-ours-2-0",
  "not a stamped line",
  "",
].join("\n");

Deno.test("bench real: a stamped log parses to epoch milliseconds per line", () => {
  const lines = parseStampedLog(LOG);
  assert.equal(lines.length, 6);
  assert.equal(lines[0].at, Date.parse("2026-11-27T04:10:01.100Z"));
  assert.equal(lines[0].text, "👋 Hello, I'm real-ours-2-0");
});

Deno.test("bench real: joined is the quorum-full line, first output the first hostname", () => {
  const lines = parseStampedLog(LOG);
  assert.equal(quorumFullAt(lines), Date.parse("2026-11-27T04:10:03.510Z"));
  // "Hello, I'm real-ours-2-0" is not a job's output: only a line that is a hostname.
  assert.equal(firstHostnameAt(lines, "real-ours-2"), Date.parse("2026-11-27T04:10:04.020Z"));
  assert.equal(firstHostnameAt(lines, "real-go-2"), undefined);
  assert.equal(quorumFullAt(parseStampedLog(LOG.replace("quorum-full", "quorum"))), undefined);
});

Deno.test("bench real: each contender goes first in turn", () => {
  const c = ["ours", "go", "floor"];
  assert.deepEqual(rotation(c, 0), ["ours", "go", "floor"]);
  assert.deepEqual(rotation(c, 1), ["go", "floor", "ours"]);
  assert.deepEqual(rotation(c, 2), ["floor", "ours", "go"]);
  assert.deepEqual(rotation(c, 3), c);
});

Deno.test("bench real: medians per size and contender, in the table's order", () => {
  const run = (contender: "ours-volume" | "go", size: number, joinedMs: number) => ({
    contender,
    size,
    podsRunningMs: 1000,
    joinedMs,
    firstOutputMs: joinedMs + 100,
    succeededMs: joinedMs + 2000,
  });
  const rows = summarize(
    [
      run("go", 2, 9000),
      run("ours-volume", 2, 3000),
      run("ours-volume", 2, 5000),
      run("ours-volume", 2, 4000),
    ],
    [2, 4],
    ["ours-volume", "go", "floor-copy"],
  );
  assert.deepEqual(rows.map((r) => [r.size, r.contender, r.joinedMs]), [
    [2, "ours-volume", 4000],
    [2, "go", 9000],
  ]);
  assert.match(table(rows), /\| 2 \| ours-volume \| 1\.0 \| 4\.0 \| 4\.1 \| 6\.0 \|/);
});
