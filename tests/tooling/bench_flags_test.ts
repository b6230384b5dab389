// The bench hands our operator the pacing flags it was given (bench/flags.ts), so a run can
// measure what one pacing mechanism buys (docs/write-pacing.md).
import assert from "node:assert/strict";
import { flags, pacingArgs } from "../../bench/flags.ts";

Deno.test("bench flags: --writes-in-flight and --pacing-off reach our operator", () => {
  assert.deepEqual(pacingArgs(flags([])), [], "the operator's defaults");
  assert.deepEqual(
    pacingArgs(flags(["--writes-in-flight=4", "--pacing-off=first-status-delay,own-writes"])),
    ["--max-writes-in-flight=4", "--pacing-off=first-status-delay,own-writes"],
  );
});

Deno.test("bench flags: --real runs every contender at sizes 2, 8 and 16, three times", () => {
  const f = flags(["--real"]);
  assert.deepEqual(f.realSizes, [2, 8, 16]);
  assert.equal(f.runs, 3);
  assert.deepEqual(f.realContenders, [
    "ours-volume",
    "ours-copy",
    "go",
    "floor-copy",
    "floor-volume",
  ]);
  assert.deepEqual(flags(["--real", "--real-contenders=go,floor-volume"]).realContenders, [
    "go",
    "floor-volume",
  ]);
  assert.throws(() => flags(["--real", "--real-contenders=ours"]), /--real-contenders: ours/);
});
