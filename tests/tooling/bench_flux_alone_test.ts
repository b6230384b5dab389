// What `bench --flux-alone` reads off the brokers' lines of `flux start --test-size`, and its table.
import assert from "node:assert/strict";
import {
  type ArrivedLine,
  fluxAloneRun,
  fluxAloneTable,
  transitions,
} from "../../bench/real/flux_alone.ts";

// Lines as three brokers print them at level 6 to stderr (log-stderr-mode=local), with the times
// (ms) they arrived at.
const LINES: ArrivedLine[] = [
  [1000, "flux-alone: flux start"],
  [1030, "<6>broker.info[0]: builtins-success: load-builtins->join 19.9294ms"],
  [1031, "<6>broker.info[0]: parent-none: join->init 0.01ms"],
  [1033, "<6>broker.info[1]: builtins-success: load-builtins->join 22.1284ms"],
  [1034, "<6>broker.info[2]: builtins-success: load-builtins->join 18.0686ms"],
  [1231, "<6>broker.info[0]: rc1.0: flux modprobe rc1 Exited (rc=0) 0.2s"],
  [1232, "<6>broker.info[0]: rc1-success: init->quorum 0.2s"],
  [1235, "<6>broker.info[1]: parent-ready: join->init 0.201s"],
  [1236, "<6>broker.info[2]: parent-ready: join->init 0.202s"],
  [1600, "<6>broker.info[2]: rc1-success: init->quorum 0.364s"],
  [1700, "<6>broker.info[1]: rc1-success: init->quorum 0.465s"],
  [1850, "<6>broker.info[0]: quorum-full: quorum->run 0.618s"],
  [1860, "<6>broker.info[1]: quorum-full: quorum->run 0.16s"],
].map(([at, text]) => ({ at: at as number, text: text as string }));

Deno.test("bench flux-alone: state transitions parse with ranks and seconds, other lines do not", () => {
  const found = transitions(LINES);
  assert.equal(found.length, 11);
  assert.deepEqual(found[0], {
    rank: 0,
    event: "builtins-success",
    from: "load-builtins",
    to: "join",
    seconds: 0.0199294,
    at: 1030,
  });
  // "rc1.0: flux modprobe rc1 Exited (rc=0) 0.2s" names no transition.
  assert.ok(!found.some((t) => t.event === "rc1.0"));
});

Deno.test("bench flux-alone: a run is timed from the start line to the lead's quorum-full", () => {
  const run = fluxAloneRun(3, LINES);
  assert.equal(run.joinedMs, 850);
  assert.equal(run.leadRc1Ms, 200);
  assert.equal(run.slowestFollowerRc1Ms, 465);
  assert.ok(run.followerRc1Ms! >= 364 && run.followerRc1Ms! <= 465);
  assert.equal(run.leadQuorumMs, 618);
});

Deno.test("bench flux-alone: a run without the lead's quorum-full is an error naming it", () => {
  assert.throws(
    () => fluxAloneRun(3, LINES.filter((l) => !l.text.includes("[0]: quorum-full"))),
    /size 3: no quorum-full of the lead broker/,
  );
});

Deno.test("bench flux-alone: the table gives each size's medians and the range of joined", () => {
  const runs = [0, 100, 400].map((extra) => ({ ...fluxAloneRun(3, LINES), joinedMs: 850 + extra }));
  const table = fluxAloneTable(runs).split("\n");
  assert.equal(table.length, 3);
  assert.match(table[2], /^\| 3 \| 3 \| 0\.95 \[0\.85–1\.25\] \| 0\.20 \| /);
});
