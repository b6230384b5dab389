// Where `bench --real`'s seconds go: each pod's stamps read from its object (hand-made, in the
// shape of a Kubernetes pod's status) and its broker's stamped log, the phases and their medians,
// the waterfall's SVG and the files the bench writes.
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { parseStampedLog } from "../../bench/real/timeline.ts";
import {
  apiStamps,
  brokerUpAt,
  notePoll,
  parentReadyAt,
  type PodStamps,
  podStamps,
  refined,
  refineStamp,
} from "../../bench/real/pod_stamps.ts";
import {
  medianRun,
  PHASES,
  podSegments,
  runFigures,
  type WaterfallRun,
  waterfallTable,
  waterfallText,
} from "../../bench/real/waterfall.ts";
import { waterfallSvg } from "../../bench/real/waterfall_svg.ts";
import { writeWaterfalls } from "../../bench/real/waterfall_files.ts";

const T = (hms: string) => `2026-11-29T03:00:${hms}Z`;
const ms = (hms: string) => Date.parse(T(hms));

/** A container that ran from `started` to `finished` and exited 0. */
function completed(name: string, image: string, started: string, finished: string) {
  return {
    name,
    image,
    imageID: "",
    ready: false,
    restartCount: 0,
    state: {
      terminated: {
        exitCode: 0,
        reason: "Completed",
        startedAt: T(started),
        finishedAt: T(finished),
      },
    },
  };
}

/** A completed broker pod of the copy design: the flux-view init container, then the broker. */
function copyPod(index: number, stamps: Record<string, string>): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `real-ours-copy-2-0-${index}-abcde`,
      creationTimestamp: T(stamps.created),
      labels: { "batch.kubernetes.io/job-completion-index": `${index}` },
    },
    spec: {
      nodeName: `real-node-${index + 1}`,
      initContainers: [{ name: "flux-view", image: "flux-view" }],
      containers: [{ name: "real-ours-copy-2-0", image: "flux-app" }],
    },
    status: {
      phase: "Succeeded",
      conditions: [
        { type: "PodReadyToStartContainers", status: "False", lastTransitionTime: T("59") },
        { type: "Initialized", status: "True", lastTransitionTime: T(stamps.initialized) },
        { type: "Ready", status: "False", lastTransitionTime: T("59") },
        { type: "PodScheduled", status: "True", lastTransitionTime: T(stamps.scheduled) },
      ],
      initContainerStatuses: [
        completed("flux-view", "flux-view", stamps.initStarted, stamps.initFinished),
      ],
      containerStatuses: [
        completed("real-ours-copy-2-0", "flux-app", stamps.containersStarted, "59"),
      ],
    },
  };
}

const LEAD = copyPod(0, {
  created: "01",
  scheduled: "01",
  initialized: "04",
  initStarted: "02",
  initFinished: "04",
  containersStarted: "05",
});
// A finished pod's sandbox is gone (PodReadyToStartContainers False); this one is still running.
LEAD.status!.conditions![0] = {
  type: "PodReadyToStartContainers",
  status: "True",
  lastTransitionTime: T("02"),
};

// The lead's and a follower's broker logs as `kubectl logs --timestamps` prints them (Flux 0.88,
// log-stderr-level 6, log-stderr-mode local): the severity in angle brackets, then the line, as the
// brokers of the real nodes printed them on 2026-11-29.
const LEAD_LOG = parseStampedLog([
  "2026-11-29T03:00:05.200000000Z 👋 Hello, I'm real-ours-copy-2-0-0",
  "2026-11-29T03:00:05.300000000Z The main host is real-ours-copy-2-0-0 (broker.info[0]: not yet)",
  "2026-11-29T03:00:05.610000000Z <6>broker.info[0]: builtins-success: load-builtins->join 12.1ms",
  "2026-11-29T03:00:05.620000000Z <6>broker.info[0]: parent-none: join->config-sync 0.02ms",
  "2026-11-29T03:00:06.900000000Z <6>broker.info[0]: quorum-full: quorum->run 1.2s",
  "2026-11-29T03:00:07.250000000Z real-ours-copy-2-0-1",
  "2026-11-29T03:00:07.260000000Z real-ours-copy-2-0-0",
].join("\n"));
/** A follower copy pod, its sandbox gone (it finished). */
const followerPod = () =>
  copyPod(1, {
    created: "01",
    scheduled: "02",
    initialized: "05",
    initStarted: "03",
    initFinished: "05",
    containersStarted: "06",
  });

const FOLLOWER_LOG = parseStampedLog([
  "2026-11-29T03:00:06.050000000Z 🌀 flux start -o --config /mnt/flux/config",
  "2026-11-29T03:00:06.300000000Z <6>broker.info[1]: builtins-success: load-builtins->join 11ms",
  "2026-11-29T03:00:06.820000000Z <6>broker.info[1]: parent-ready: join->config-sync 0.5s",
].join("\n"));

Deno.test("waterfall stamps: a copy pod's API stamps, its init container's run", () => {
  const s = apiStamps(LEAD);
  assert.equal(s.created, ms("01"));
  assert.equal(s.scheduled, ms("01"));
  assert.equal(s.sandboxReady, ms("02"));
  assert.equal(s.initialized, ms("04"));
  assert.equal(s.initStarted, ms("02"));
  assert.equal(s.initFinished, ms("04"));
  assert.equal(s.containersStarted, ms("05"));
  assert.deepEqual(s.initContainers, [
    { name: "flux-view", startedAt: ms("02"), finishedAt: ms("04") },
  ]);
  // A condition that is False has no moment: the sandbox of a finished pod is gone.
  const follower = followerPod();
  assert.equal(apiStamps(follower).sandboxReady, undefined);
});

Deno.test("waterfall stamps: a mounted view's pod has no init phase; a restart keeps the first start", () => {
  const pod = copyPod(1, {
    created: "01",
    scheduled: "01",
    initialized: "01",
    initStarted: "02",
    initFinished: "02",
    containersStarted: "09",
  });
  delete pod.spec!.initContainers;
  delete pod.status!.initContainerStatuses;
  pod.status!.containerStatuses![0].lastState = {
    terminated: { exitCode: 1, startedAt: T("03"), finishedAt: T("04") },
  };
  const s = apiStamps(pod);
  assert.equal(s.initStarted, undefined);
  assert.equal(s.initFinished, undefined);
  assert.equal(s.containersStarted, ms("03"));
  // Not every container started yet: no moment for them all.
  pod.status!.containerStatuses![0] = {
    ...pod.status!.containerStatuses![0],
    lastState: {},
    state: { waiting: { reason: "ContainerCreating" } },
  };
  assert.equal(apiStamps(pod).containersStarted, undefined);
});

Deno.test("waterfall stamps: broker up is the broker's first own line; joined per rank", () => {
  // The entrypoint's echo naming a broker is not the broker's line.
  assert.equal(brokerUpAt(LEAD_LOG), Date.parse("2026-11-29T03:00:05.610Z"));
  assert.equal(parentReadyAt(FOLLOWER_LOG), Date.parse("2026-11-29T03:00:06.820Z"));
  assert.equal(parentReadyAt(LEAD_LOG), undefined);
  const lead = podStamps(LEAD, LEAD_LOG);
  assert.equal(lead.index, 0);
  assert.equal(lead.node, "real-node-1");
  assert.equal(lead.joined, Date.parse("2026-11-29T03:00:06.900Z"), "the lead's quorum-full");
  const follower = podStamps(
    followerPod(),
    FOLLOWER_LOG,
  );
  assert.equal(follower.brokerUp, Date.parse("2026-11-29T03:00:06.300Z"));
  assert.equal(follower.joined, Date.parse("2026-11-29T03:00:06.820Z"), "its parent-ready");
});

Deno.test("waterfall stamps: the polls narrow an API stamp's whole second", () => {
  const s = ms("04");
  assert.equal(refineStamp(s), s + 500, "no poll: the middle of the second");
  assert.equal(refineStamp(s, s + 600, s + 800), s + 700);
  assert.equal(refineStamp(s, s - 2000, s + 200), s + 100);
  // Polls that contradict the stamp (clocks apart) leave it as it is.
  assert.equal(refineStamp(s, s + 1500, s + 1700), s);

  const bounds = new Map();
  const waiting = structuredClone(LEAD);
  waiting.status!.containerStatuses![0].state = { waiting: { reason: "PodInitializing" } };
  notePoll(bounds, [waiting], ms("05") + 100, ms("05") + 150);
  notePoll(bounds, [LEAD], ms("05") + 350, ms("05") + 400);
  notePoll(bounds, [LEAD], ms("05") + 600, ms("05") + 650);
  const pod = refined(podStamps(LEAD, LEAD_LOG), bounds.get(LEAD.metadata!.name), ms("00"));
  assert.equal(pod.containersStarted, ms("05") + 250, "between the two polls");
  assert.equal(pod.brokerUp, Date.parse("2026-11-29T03:00:05.610Z"), "log stamps are kept");
  // Seen on the first poll, never seen missing: bounded by the create only.
  assert.equal(pod.created, ms("01") + 500);
  // Listed first by a poll after one that did not list it: created after that one was sent.
  const later = new Map();
  notePoll(later, [LEAD], ms("01") + 900, ms("01") + 950, ms("01") + 600);
  assert.equal(
    refined(podStamps(LEAD, LEAD_LOG), later.get(LEAD.metadata!.name), ms("00")).created,
    ms("01") + 775,
  );

  // The sandbox condition turns False once the pod finished: the polls' value stands, and a poll
  // after it went does not move its bounds.
  const finished = structuredClone(LEAD);
  finished.status!.conditions![0] = {
    type: "PodReadyToStartContainers",
    status: "False",
    lastTransitionTime: T("09"),
  };
  notePoll(bounds, [finished], ms("09") + 300, ms("09") + 350);
  const fromPolls = refined(
    podStamps(finished, LEAD_LOG),
    bounds.get(LEAD.metadata!.name),
    ms("00"),
  );
  assert.equal(fromPolls.sandboxReady, ms("02") + 500, "02 as the first poll saw it");
  assert.equal(podStamps(finished, LEAD_LOG).sandboxReady, undefined);
});

function run(contender: string, size: number, runIndex: number, shift: number): WaterfallRun {
  const lead = podStamps(LEAD, LEAD_LOG);
  const follower = podStamps(
    followerPod(),
    FOLLOWER_LOG,
  );
  const moved = (p: PodStamps): PodStamps =>
    Object.fromEntries(
      Object.entries(p).map((
        [k, v],
      ) => [k, typeof v === "number" && k !== "index" ? v + shift : v]),
    ) as unknown as PodStamps;
  return {
    contender,
    size,
    run: runIndex,
    appliedAt: ms("00") + 500,
    // The follower first: the picture orders by rank.
    pods: [moved(follower), moved(lead)],
    quorumFullAt: Date.parse("2026-11-29T03:00:06.900Z") + shift,
    firstOutputAt: Date.parse("2026-11-29T03:00:07.250Z") + shift,
  };
}

Deno.test("waterfall phases: consecutive from the pod's creation, in order, never going back", () => {
  const r = run("ours-copy", 2, 0, 0);
  const lead = r.pods.find((p) => p.index === 0)!;
  assert.deepEqual(podSegments(lead, r).map((s) => [s.phase, s.startMs, s.endMs]), [
    ["scheduled", 500, 500],
    ["sandbox", 500, 1500],
    ["initStart", 1500, 1500],
    ["initCopy", 1500, 3500],
    ["containersStart", 3500, 4500],
    ["brokerUp", 4500, 5110],
    ["joined", 5110, 6400],
    ["firstOutput", 6400, 6750],
  ]);
  // The follower: no sandbox moment (gone with the pod), no first output of its own.
  const follower = r.pods.find((p) => p.index === 1)!;
  const segs = podSegments(follower, r);
  assert.deepEqual(segs.map((s) => s.phase), [
    "scheduled",
    "initStart",
    "initCopy",
    "containersStart",
    "brokerUp",
    "joined",
  ]);
  // A stamp of whole seconds before the log's stamp before it: the phase is empty, not negative.
  const early = { ...follower, joined: follower.brokerUp! - 400 };
  const joined = podSegments(early, r).find((s) => s.phase === "joined")!;
  assert.equal(joined.endMs, joined.startMs);
  for (const s of segs) assert.ok(s.endMs >= s.startMs);
  segs.slice(1).forEach((s, i) => assert.equal(s.startMs, segs[i].endMs));
});

Deno.test("waterfall table: medians of the runs per phase, contender and size", () => {
  const f = runFigures(run("ours-copy", 2, 0, 0));
  assert.deepEqual(f.phases.initCopy, { medianMs: 2000, lastEndMs: 4500 });
  assert.equal(f.lastContainerToJoinedMs, 900, "06.000 → quorum-full at 06.900");
  assert.equal(f.joinedMs, 6400);
  const runs = [
    run("ours-copy", 2, 0, 0),
    run("ours-copy", 2, 1, 3000),
    run("ours-copy", 2, 2, 1000),
    run("go", 2, 0, 5000),
  ];
  const rows = waterfallTable(runs, [2, 8], ["ours-volume", "ours-copy", "go"]);
  assert.deepEqual(rows.map((r) => [r.contender, r.size, r.runs]), [
    ["ours-copy", 2, 3],
    ["go", 2, 1],
  ]);
  // Shifting every stamp moves the ends from the create, not the phases' lengths.
  assert.deepEqual(rows[0].phases.initCopy, { medianMs: 2000, lastEndMs: 5500 });
  assert.equal(rows[0].joinedMs, 7400);
  assert.equal(rows[1].joinedMs, 11400);
  assert.equal(rows[0].lastContainerToJoinedMs, 900);
  assert.equal(medianRun(runs.slice(0, 3))!.run, 2);
  const text = waterfallText(rows);
  assert.equal(text.split("\n").length, 4);
  assert.match(text.split("\n")[0], /\| scheduling \| sandbox \| init start \| init \(copy\) \|/);
  assert.match(
    text,
    /\| 2 \| ours-copy \| .*\| 2\.00 \/ 5\.50 \| .*\| 0\.90 \| 7\.40 \| 7\.75 \|$/m,
  );
});

/** Well-formed enough for a browser: every tag closed in order, attributes quoted. */
function assertWellFormed(svg: string): void {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([a-zA-Z]+)((?:\s+[a-zA-Z0-9:-]+="[^"<]*")*)\s*(\/?)>/g)) {
    const [, close, name, , self] = m;
    if (self) continue;
    if (close) assert.equal(stack.pop(), name, `</${name}> closes ${stack.at(-1)}`);
    else stack.push(name);
  }
  assert.deepEqual(stack, [], "every element closed");
  const tags = svg.match(/<[^>]*>/g)!.length;
  const parsed = [...svg.matchAll(/<(\/?)([a-zA-Z]+)((?:\s+[a-zA-Z0-9:-]+="[^"<]*")*)\s*(\/?)>/g)]
    .length;
  assert.equal(parsed, tags, "every tag parses");
}

Deno.test("waterfall svg: one row per pod in rank order, its phases left to right in order", () => {
  const r = run("ours-copy", 2, 0, 0);
  const svg = waterfallSvg(r, "ours-copy, 2 brokers <& run 1>");
  assertWellFormed(svg);
  assert.match(svg, /ours-copy, 2 brokers &lt;&amp; run 1&gt;/);
  const rows = [...svg.matchAll(/<g class="pod" data-pod="([^"]+)">([\s\S]*?)<\/g>/g)];
  assert.deepEqual(rows.map((m) => m[1]), [
    "real-ours-copy-2-0-0-abcde",
    "real-ours-copy-2-0-1-abcde",
  ]);
  const order = PHASES.map((p) => p.key as string);
  for (const [, , body] of rows) {
    const rects = [
      ...body.matchAll(/<rect data-phase="(\w+)" x="([\d.]+)"[^>]* width="([\d.]+)"/g),
    ];
    assert.ok(rects.length >= 6);
    const phases = rects.map((m) => m[1]);
    assert.deepEqual(phases, [...phases].sort((a, b) => order.indexOf(a) - order.indexOf(b)));
    rects.slice(1).forEach((m, i) => {
      const prevEnd = Number(rects[i][2]) + Number(rects[i][3]);
      assert.ok(Math.abs(Number(m[2]) - prevEnd) < 0.2, `${m[1]} starts where ${rects[i][1]} ends`);
    });
  }
  assert.equal((svg.match(/class="mark"/g) ?? []).length, 2, "every broker joined, first output");
  assert.match(rows[1][2], />broker 1 \(real-node-2\)</, "the row's rank and node");
});

Deno.test("waterfall files: the runs and medians, the table, a picture per contender and size", async () => {
  const dir = await Deno.makeTempDir({ prefix: "waterfall-files-" });
  try {
    const runs = [
      run("ours-copy", 2, 0, 0),
      run("ours-copy", 2, 1, 3000),
      run("go", 2, 0, 5000),
      run("go", 8, 0, 0),
    ];
    const { files, text } = await writeWaterfalls(
      dir,
      "2026-11-29",
      runs,
      [2, 8],
      ["ours-volume", "ours-copy", "go"],
      2,
      "1.0 1.0 1.0",
    );
    const base = `${dir}/2026-11-29-real-waterfall`;
    assert.deepEqual(files, [
      `${base}.json`,
      `${base}.txt`,
      `${base}-ours-copy-2.svg`,
      `${base}-go-2.svg`,
      `${base}-go-8.svg`,
    ]);
    const names = [...Deno.readDirSync(dir)].map((e) => `${dir}/${e.name}`).sort();
    assert.deepEqual(names, [...files].sort(), "nothing else");
    const json = JSON.parse(await Deno.readTextFile(`${base}.json`));
    assert.equal(json.runs.length, 4);
    assert.deepEqual(
      json.medians.map((r: { contender: string; size: number }) => [r.contender, r.size]),
      [["ours-copy", 2], ["go", 2], ["go", 8]],
    );
    assert.equal(await Deno.readTextFile(`${base}.txt`), text);
    assert.match(text, /load 1\.0 1\.0 1\.0/);
    assert.equal(text.trim().split("\n").length, 6, "a caption, the head, its rule, three rows");
    assertWellFormed(await Deno.readTextFile(`${base}-go-8.svg`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
