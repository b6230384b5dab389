/**
 * The cores each broker advertises: the rule (requests, else limits, whole cores, at least one)
 * and the `flux R encode` the lead broker's script runs with it, in a sandbox against a stub flux.
 */
import assert from "node:assert/strict";
import type { MiniClusterContainer } from "../../api/mod.ts";
import { brokerCores } from "../../controllers/minicluster/children/scripts/cores.ts";
import { buildEntrypointConfigMap } from "../../controllers/minicluster/children/entrypoint.ts";
import { inSandbox, runLead } from "./lead_sandbox.ts";
import { miniCluster } from "./entrypoint_cases.ts";
import { quotaCpus, resourceRow } from "../real/flux_resources.ts";
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
async function encodes(container: MiniClusterContainer, opts: { gpus?: number; strict?: boolean }) {
  let found: string[][] = [];
  await inSandbox(async (root) => {
    const { problems, result, calls } = await runLead(root, container, {}, opts);
    assert.deepEqual(problems, []);
    assert.equal(result.code, 0, result.stderr);
    // The GPU count is tested as a number, and an empty gpuIds array expands under set -u.
    assert.doesNotMatch(result.stderr, /integer expression|unbound variable/);
    const written = await Deno.readTextFile(`${root}/mnt/config/etc/flux/system/R`);
    assert.equal(written.trim(), "{}", "the encoded R is what the broker's config names");
    const rCalls = calls.filter((c) => c[1] === "R").map((c) => c.slice(1));
    // The two ends of a pipeline (the GPU count) log in either order.
    found = [...rCalls.slice(0, -1).sort(), ...rCalls.slice(-1)];
  });
  return found;
}

Deno.test("without CPU resources every rank gets the node's hwloc topology, as in Go", async () => {
  assert.deepEqual(await encodes({ command: "hostname" }, {}), [
    ["R", "encode", "--hosts=mc-0", "--local"],
  ]);
});

Deno.test("with CPU resources every rank gets that many cores, and the GPUs hwloc sees", async () => {
  const container = (cpu: string) => ({ command: "hostname", resources: { limits: { cpu } } });
  for (const strict of [false, true]) {
    const encode = (args: string[]) => [
      ["R", "decode", "--count=gpu"],
      ["R", "encode", "--local"],
      ["R", "encode", "--hosts=mc-0", ...args],
    ];
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

Deno.test("every broker's script encodes the same R: the count comes from the spec", () => {
  const mc = miniCluster({
    size: 3,
    containers: [{ image, command: "hostname", resources: { requests: { cpu: "2" } } }],
  });
  const script = buildEntrypointConfigMap(mc, specSizing(mc)).data?.["wait-0"] ?? "";
  // One script for every pod, and the count is a literal in it, not read from the pod.
  assert.match(script, /flux R encode --hosts="\$\{hosts\}" --cores=0-1 "\$\{gpuIds\[@\]\}"/);
  assert.ok(!script.includes("--local >"), "no rank is written from its own node's cores");
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
