/**
 * The cores each broker advertises: the rule (requests, else limits, whole cores, at least one),
 * bounded by the cores hwloc finds in the container's cpuset, and the `flux R encode` the lead
 * broker's script runs with it, in a sandbox against a stub flux.
 */
import assert from "node:assert/strict";
import type { MiniClusterContainer } from "../../api/mod.ts";
import { brokerCores } from "../../controllers/minicluster/children/scripts/parts/cores.ts";
import { buildEntrypointConfigMap } from "../../controllers/minicluster/children/entrypoint.ts";
import { inSandbox, runLead } from "./lead_sandbox.ts";
import { miniCluster } from "./entrypoint_cases.ts";
import { quotaCpus, resourceRow, smtTopologyXml } from "../real/flux_resources.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";

const image = "rockylinux:9";
const cores = (resources: MiniClusterContainer["resources"]) =>
  brokerCores({ image, resources } as Parameters<typeof brokerCores>[0]);

Deno.test("a broker advertises the CPU request, else the limit, in whole cores, at least one", () => {
  assert.equal(cores(undefined), undefined);
  assert.equal(cores({}), undefined);
  assert.equal(cores({ limits: { memory: "1Gi" }, requests: { memory: "1Gi" } }), undefined);
  assert.equal(cores({ limits: { cpu: 1 } }), 1);
  assert.equal(cores({ limits: { cpu: "4" } }), 4);
  assert.equal(cores({ requests: { cpu: "2" } }), 2);
  // The request is what the scheduler reserved on the node; the limit only caps bursts.
  assert.equal(cores({ requests: { cpu: "1" }, limits: { cpu: "3" } }), 1);
  assert.equal(cores({ requests: { cpu: "2000m" } }), 2);
  assert.equal(cores({ requests: { cpu: "1500m" } }), 1);
  assert.equal(cores({ requests: { cpu: 2.9 } }), 2);
  assert.equal(cores({ requests: { cpu: "3000m" } }), 3);
  assert.equal(cores({ requests: { cpu: "250m" } }), 1);
  assert.equal(cores({ requests: { cpu: "0" } }), 1);
  assert.equal(cores({ limits: { cpu: "1e1" } }), 10);
  assert.equal(cores({ limits: { cpu: "lots" } }), undefined);
});

/** The `flux R encode` calls of the lead broker's script for this container. */
async function encodes(
  container: MiniClusterContainer,
  opts: { gpus?: number; strict?: boolean; hwlocCores?: number },
) {
  return (await leadRun(container, opts)).rCalls;
}

/** The lead broker's `flux R` calls and stderr for this container, hwloc answering `opts`. */
async function leadRun(
  container: MiniClusterContainer,
  opts: { gpus?: number; strict?: boolean; hwlocCores?: number },
) {
  let found: string[][] = [];
  let stderr = "";
  await inSandbox(async (root) => {
    const { problems, result, calls } = await runLead(root, container, {}, opts);
    assert.deepEqual(problems, []);
    assert.equal(result.code, 0, result.stderr);
    // The GPU count is tested as a number, and an empty gpuIds array expands under set -u.
    assert.doesNotMatch(result.stderr, /integer expression|unbound variable/);
    const written = await Deno.readTextFile(`${root}/mnt/config/etc/flux/system/R`);
    assert.equal(written.trim(), "{}", "the encoded R is what the broker's config names");
    const rCalls = calls.filter((c) => c[1] === "R").map((c) => c.slice(1));
    // What hwloc finds is read before the one R that is written; sorted, as their order is not
    // the point.
    found = [...rCalls.slice(0, -1).sort(), ...rCalls.slice(-1)];
    stderr = result.stderr;
  });
  return { rCalls: found, stderr };
}

Deno.test("without CPU resources every rank gets the node's hwloc topology, as in Go", async () => {
  assert.deepEqual(await encodes({ command: "hostname" }, {}), [
    ["R", "encode", "--hosts=mc-0", "--local"],
  ]);
});

/** The lead broker's `flux R` calls: what hwloc finds locally, then the R it writes. */
const encode = (args: string[]) => [
  ["R", "decode", "--count=core"],
  ["R", "decode", "--count=gpu"],
  ["R", "encode", "--local"],
  ["R", "encode", "--hosts=mc-0", ...args],
];
const cpuLimit = (cpu: string) => ({ command: "hostname", resources: { limits: { cpu } } });

Deno.test("with CPU resources every rank gets that many cores, and the GPUs hwloc sees", async () => {
  const container = cpuLimit;
  for (const strict of [false, true]) {
    assert.deepEqual(await encodes(container("1"), { strict }), encode(["--cores=0"]));
    assert.deepEqual(await encodes(container("2"), { strict }), encode(["--cores=0-1"]));
    assert.deepEqual(
      await encodes(container("2"), { strict, gpus: 1 }),
      encode(["--cores=0-1", "--gpus=0"]),
    );
    assert.deepEqual(
      await encodes(container("500m"), { strict, gpus: 4 }),
      encode(["--cores=0", "--gpus=0-3"]),
    );
  }
});

Deno.test("a broker advertises no more cores than hwloc finds in its cpuset, and says so", async () => {
  const fewer = /grant 4 CPU\(s\), but hwloc finds 2 core\(s\) in its cpuset .*advertises 2 core/;
  for (const strict of [false, true]) {
    // Four Kubernetes CPUs pinned to two cores of two threads each: two cores, in the log too.
    const smt = await leadRun(cpuLimit("4"), { strict, hwlocCores: 2 });
    assert.deepEqual(smt.rCalls, encode(["--cores=0-1"]));
    assert.match(smt.stderr, fewer, smt.stderr);
    const one = await leadRun(cpuLimit("2"), { strict, hwlocCores: 1, gpus: 2 });
    assert.deepEqual(one.rCalls, encode(["--cores=0", "--gpus=0-1"]));
    assert.match(one.stderr, /hwloc finds 1 core\(s\)/, one.stderr);
    // As many cores as CPUs, or more (a node's cores without pinning): the CPUs, and no word.
    for (const hwlocCores of [4, 16]) {
      const plenty = await leadRun(cpuLimit("4"), { strict, hwlocCores });
      assert.deepEqual(plenty.rCalls, encode(["--cores=0-3"]));
      assert.doesNotMatch(plenty.stderr, /hwloc finds/, plenty.stderr);
    }
  }
  // The difference is a warning, said under logging.quiet too.
  const quiet = miniCluster({
    size: 2,
    containers: [{ image, command: "hostname", resources: { requests: { cpu: "4" } } }],
    logging: { quiet: true },
  });
  assert.match(
    buildEntrypointConfigMap(quiet, specSizing(quiet)).data?.["wait-0"] ?? "",
    /hwloc finds .*>&2$/m,
  );
});

Deno.test("every broker's script has the same bound: the count comes from the spec", () => {
  const mc = miniCluster({
    size: 3,
    containers: [{ image, command: "hostname", resources: { requests: { cpu: "2" } } }],
  });
  const script = buildEntrypointConfigMap(mc, specSizing(mc)).data?.["wait-0"] ?? "";
  // One script for every pod, and the bound is a literal in it, not read from the pod; each rank
  // lowers it only to the cores its own cpuset holds.
  assert.match(script, /^cores=2$/m);
  assert.match(
    script,
    /flux R encode --hosts="\$\{hosts\}" --cores="\$\{coreIds\}" "\$\{gpuIds\[@\]\}"/,
  );
  assert.ok(!script.includes("--local >"), "no rank is written from its own node's cores alone");
});

Deno.test("the real-node test's readings: flux resource list rows and cgroup CPU quotas", () => {
  const list = [
    "     STATE NNODES NCORES NGPUS NODELIST",
    "      free      2      2     0 cores-[0-1]",
    " allocated      0      0     0 ",
    "      down      0      0     0 ",
  ].join("\n");
  assert.deepEqual(resourceRow(list, "free"), { nodes: 2, cores: 2 });
  assert.deepEqual(resourceRow(list, "down"), { nodes: 0, cores: 0 });
  assert.equal(resourceRow(list, "drained"), undefined);
  // cgroup v2 cpu.max, then v1's quota and period.
  assert.equal(quotaCpus("100000 100000\n"), 1);
  assert.equal(quotaCpus("150000 100000"), 1);
  assert.equal(quotaCpus("max 100000"), undefined);
  assert.equal(quotaCpus("200000 100000"), 2);
  assert.equal(quotaCpus("-1 100000"), undefined);
  assert.equal(quotaCpus(" \n"), undefined);
});

Deno.test("the real-node test's topology: cores of adjacent hardware threads, as lstopo writes it", () => {
  const xml = smtTopologyXml(2, 2);
  const objects = (type: string) =>
    [...xml.matchAll(
      new RegExp(`<object type="${type}" os_index="(\\d+)" cpuset="(0x[0-9a-f]+)"`, "g"),
    )]
      .map((m) => [Number(m[1]), m[2]]);
  assert.deepEqual(objects("Core"), [[0, "0x00000003"], [1, "0x0000000c"]]);
  assert.deepEqual(objects("PU"), [[0, "0x00000001"], [1, "0x00000002"], [2, "0x00000004"], [
    3,
    "0x00000008",
  ]]);
  assert.match(xml, /<object type="Machine" os_index="0" cpuset="0x0000000f"/);
  assert.match(xml, /^<topology version="2.0">$/m);
  assert.deepEqual(
    [...smtTopologyXml(1, 2).matchAll(/type="PU" os_index="(\d)"/g)].map((m) => m[1]),
    ["0", "1"],
  );
});
