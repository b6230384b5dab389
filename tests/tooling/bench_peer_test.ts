// The pure parts of `deno task bench --peer`: counting requests from audit events, APF deltas,
// the side-by-side report and its plot.
import assert from "node:assert/strict";
import { join } from "node:path";
import { AuditLog, auditPolicy, countRequests, total, writes } from "../../bench/peer/audit.ts";
import { apfDelta } from "../../bench/peer/apf.ts";
import { formatPeerReport, peerPlot, type PeerResults } from "../../bench/peer/report.ts";
import type { PeerRun } from "../../bench/peer/run.ts";
import { summarize } from "../../bench/stats.ts";

const event = (user: string, verb: string, stage: string, resource = "pods", sub?: string) =>
  JSON.stringify({
    stage,
    verb,
    user: { username: user, groups: ["system:serviceaccounts"] },
    objectRef: { resource, subresource: sub },
  });

Deno.test("countRequests: one per request, a watch when it starts, only the user's", () => {
  const lines = [
    event("bench-ours", "create", "ResponseComplete", "configmaps"),
    event("bench-ours", "patch", "ResponseComplete", "miniclusters", "status"),
    event("bench-ours", "watch", "ResponseStarted"),
    event("bench-ours", "watch", "ResponseComplete"),
    event("bench-go", "list", "ResponseComplete"),
    event("bench-ours-not", "create", "ResponseComplete"),
    '{"truncated',
  ];
  const c = countRequests(lines, "bench-ours");
  assert.deepEqual(c, {
    "create configmaps": 1,
    "patch miniclusters/status": 1,
    "watch pods": 1,
  });
  assert.equal(total(c), 3);
  assert.equal(writes(c), 2);
});

Deno.test("AuditLog: a rotation between mark and since loses nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "audit.log");
    const put = (file: string, n: number) =>
      Deno.writeTextFile(
        file,
        `${event("bench-ours", "create", "ResponseComplete", "configmaps")}\n`.repeat(n),
        { append: true },
      );
    await Deno.writeTextFile(join(dir, "audit-policy.yaml"), "not a log\n");
    await put(path, 2);
    const log = new AuditLog(path);
    const mark = log.mark();
    await put(path, 3);
    // lumberjack's rotation: the file renamed with a timestamp, a new one started.
    await Deno.rename(path, join(dir, "audit-2026-11-24T08-24-11.609.log"));
    await put(path, 4);
    assert.deepEqual(await log.since(mark, "bench-ours"), { "create configmaps": 7 });
    const second = log.mark();
    await Deno.rename(path, join(dir, "audit-2026-11-24T09-00-00.000.log"));
    await put(path, 1);
    assert.deepEqual(await log.since(second, "bench-ours"), { "create configmaps": 1 });
    assert.deepEqual(await log.since(0, "bench-ours"), { "create configmaps": 10 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("auditPolicy: Metadata for the named users, nothing else", () => {
  const p = auditPolicy(["a", "b"]);
  assert.match(p, /level: Metadata\n {4}users: \["a", "b"\]/);
  assert.match(p, /- level: None\n$/);
});

Deno.test("apfDelta: what changed, with the time queued", () => {
  assert.deepEqual(
    apfDelta({ "x/y": [1, 0.5], "e/e": [3, 0] }, {
      "x/y": [4, 1.75],
      "e/e": [3, 0],
      "n/m": [2, 0],
    }),
    { "x/y": [3, 1.25], "n/m": [2, 0] },
  );
});

function run(operator: "ours" | "go", n: number, allChildrenMs: number): PeerRun {
  const s = summarize([allChildrenMs / 2, allChildrenMs]);
  return {
    operator,
    miniClusters: n,
    size: 4,
    order: 0,
    createsMs: 1000,
    duringCreates: { "patch jobs": 3, "watch jobs": 1 },
    allChildrenMs,
    allReadyMs: allChildrenMs * 2,
    readyMiniClusters: n,
    childrenMs: s,
    readyMs: s,
    requests: { "create jobs": n },
    requestsPerMiniCluster: 1,
    writesPerMiniCluster: 1,
    cpuSeconds: 1,
    controlPlaneCpuSeconds: 2,
    rssEndBytes: 2 ** 20,
    apf: { "service-accounts/workload-low": [n, 0] },
    idle: { windowMs: 60_000, requests: {}, rssBytes: 2 ** 20, cpuSeconds: 0 },
  };
}

Deno.test("formatPeerReport: side by side with the ratio line per N; the plot has both", () => {
  const results: PeerResults = {
    date: "2026-11-23T00:00:00Z",
    machine: {},
    notes: ["a note"],
    runs: [run("ours", 100, 2000), run("go", 100, 8000), run("ours", 1000, 20_000)],
  };
  const text = formatPeerReport(results);
  assert.match(text, /peer ratio all-children \(ours\/go\): 0\.25 \(N=100\)/);
  assert.match(text, /all children\s+2\.00 s\s+8\.00 s\s+0\.25/);
  assert.match(text, /operator writes during them\s+3\s+3\s+1\.00/);
  assert.match(text, /note: a note/);
  const svg = peerPlot(results);
  assert.match(svg, /^<svg /);
  assert.match(svg, /Go operator/);
  assert.equal((svg.match(/<g transform/g) ?? []).length, 3);
});

Deno.test("formatPeerReport: a Ready wait that stalled shows how many got Ready, and no time", () => {
  const stalled = { ...run("ours", 10_000, 900_000), allReadyMs: NaN, readyMiniClusters: 6829 };
  const text = formatPeerReport({
    date: "2026-11-24T00:00:00Z",
    machine: {},
    notes: [],
    runs: [stalled, run("go", 10_000, 1_800_000)],
  });
  assert.match(text, /MiniClusters with every pod Ready\s+6829\s+10000\s+0\.68/);
  assert.match(text, /all pods Ready\s+not reached\s+3600\.00 s\s+NaN/);
});
