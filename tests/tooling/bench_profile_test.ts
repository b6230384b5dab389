import assert from "node:assert/strict";
import { formatProfileSummary, summarizeProfile } from "../../bench/profile_summary.ts";
import { type CpuProfile, inspectorUrl } from "../../testing/cpu_profile.ts";
import { flags } from "../../bench/flags.ts";

const frame = (functionName: string, url = "", lineNumber = 0) => ({
  functionName,
  url,
  lineNumber,
  columnNumber: 0,
});

/**
 * root → reconcile → hashOf, root → (idle), root → (garbage collector); reconcile → reconcile
 * (recursion, counted once in inclusive time). Each sample's time is the delta that follows it.
 */
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)"), children: [2, 4, 5] },
    {
      id: 2,
      callFrame: frame("reconcile", "file:///work/main/controllers/r.ts", 9),
      children: [3, 6],
    },
    { id: 3, callFrame: frame("hashOf", "file:///work/main/controllers/diff.ts", 19) },
    { id: 4, callFrame: frame("(idle)") },
    { id: 5, callFrame: frame("(garbage collector)") },
    {
      id: 6,
      callFrame: frame("reconcile", "file:///work/main/controllers/r.ts", 9),
      children: [7],
    },
    { id: 7, callFrame: frame("hashOf", "file:///work/main/controllers/diff.ts", 19) },
  ],
  startTime: 0,
  endTime: 10_000,
  samples: [3, 3, 2, 4, 5, 7, 4],
  timeDeltas: [0, 1000, 1000, 1000, 4000, 1000, 1000],
};

Deno.test("profile summary: self, file and inclusive times; idle apart; recursion counted once", () => {
  const s = summarizeProfile(profile);
  assert.equal(s.totalMs, 9);
  assert.equal(s.idleMs, 4);
  const row = (rows: { key: string; ms: number }[], key: string) =>
    rows.find((r) => r.key === key)?.ms;
  assert.equal(row(s.byFunction, "hashOf controllers/diff.ts:20"), 3);
  assert.equal(row(s.byFunction, "reconcile controllers/r.ts:10"), 1);
  assert.equal(row(s.byFunction, "(garbage collector)"), 1);
  assert.equal(row(s.byFile, "controllers/diff.ts"), 3);
  // hashOf under the recursive reconcile: its 1 ms counts once for reconcile.
  assert.equal(row(s.inclusive, "reconcile controllers/r.ts:10"), 4);
  assert.equal(row(s.inclusive, "hashOf controllers/diff.ts:20"), 3);
  assert.match(formatProfileSummary(s), /busy 0\.0 s/);
  assert.match(formatProfileSummary(s), /60\.0 % {2}hashOf controllers\/diff\.ts:20/);
});

Deno.test("profile: the inspector's address is read from Deno's stderr line", () => {
  assert.equal(
    inspectorUrl("Debugger listening on ws://127.0.0.1:43623/b1386d89-17d9-469a-b529-3b0e3a57120f"),
    "ws://127.0.0.1:43623/b1386d89-17d9-469a-b529-3b0e3a57120f",
  );
  assert.equal(inspectorUrl('{"level":"info","msg":"serving"}'), undefined);
});

Deno.test("bench flags: --cpu-profile and --operator-v8-flags", () => {
  const f = flags(["--peer", "--cpu-profile", "--operator-v8-flags=--max-semi-space-size=8"]);
  assert.equal(f.cpuProfile, true);
  assert.equal(f.operatorV8Flags, "--max-semi-space-size=8");
  assert.equal(flags(["--peer"]).cpuProfile, false);
});
