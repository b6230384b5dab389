// The MiniClusters the Go Flux Operator's own CI runs (its examples/tests/*, kept byte for byte in
// tests/fixtures/manifests/valid/go-tests-*.yaml) run here on the real node, and print what that
// CI expects. Only what cannot be had here changes: the images (the local flux-app and flux-view
// instead of ubuntu and the published views), the node they are pinned to, and the name (they all
// call themselves flux-sample). With `logging.quiet` the lead broker's log is the job's output.

import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import type { MiniCluster } from "../../api/mod.ts";
import { FLUX_APP_IMAGE, FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
import { REAL_NODE_LABEL } from "../../hack/cluster/real_node_config.ts";
import { eventually } from "../harness.ts";
import { kubectl, REAL_NAMESPACE, type RealEnv, realTest } from "./env.ts";

const FIXTURES = new URL("../fixtures/manifests/valid/", import.meta.url).pathname;

/** The fixture as it runs here: local images, pinned to the real node, its own name. */
async function localized(fixture: string, name: string): Promise<MiniCluster> {
  const mc = parse(await Deno.readTextFile(join(FIXTURES, fixture))) as MiniCluster;
  const spec = mc.spec!;
  spec.containers = spec.containers!.map((c) => ({ ...c, image: FLUX_APP_IMAGE }));
  spec.flux = { ...spec.flux, container: { ...spec.flux?.container, image: FLUX_VIEW_IMAGE } };
  spec.pod = {
    ...spec.pod,
    nodeSelector: { ...spec.pod?.nodeSelector, [REAL_NODE_LABEL]: "true" },
    tolerations: [
      ...(spec.pod?.tolerations ?? []),
      { key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" },
    ],
  };
  return { ...mc, metadata: { name, namespace: REAL_NAMESPACE } };
}

async function succeededLog(env: RealEnv, name: string): Promise<string> {
  await eventually(async () => {
    const mc = JSON.parse(
      await kubectl(["-n", REAL_NAMESPACE, "get", "minicluster", name, "-o", "json"]),
    );
    const c = mc.status?.conditions?.find((c: { type: string }) => c.type === "Succeeded");
    if (c?.status !== "True") {
      throw new Error(`${name} not Succeeded: ${JSON.stringify(mc.status)}`);
    }
  }, { timeoutMs: 180_000, intervalMs: 1000 });
  const pods = await env.pods(name);
  return await env.logs(pods[0].metadata!.name!, name);
}

const lines = (log: string) => log.split("\n").map((l) => l.trimEnd()).filter((l) => l !== "");

realTest("real: the Go operator's CI examples print what its CI expects", async (env) => {
  const cases: { fixture: string; name: string; check: (log: string) => void }[] = [
    {
      fixture: "go-tests-hello-world.yaml",
      name: "go-hello-world",
      check: (log) => assert.deepEqual(lines(log), ["hello world"], log),
    },
    {
      fixture: "go-tests-post.yaml",
      name: "go-post",
      check: (log) => assert.deepEqual(lines(log), ["hello world", "hello post"], log),
    },
    {
      // tasks: 4 over 4 brokers: one task on each.
      fixture: "go-tests-minimal-service.yaml",
      name: "go-minimal-service",
      check: (log) => assert.deepEqual(lines(log), Array(4).fill("hello-world"), log),
    },
    {
      fixture: "go-tests-timed.yaml",
      name: "go-timed",
      check: (log) => {
        assert.ok(lines(log).includes("hello world"), log);
        assert.match(log, /^FLUXTIME fluxsubmit wall time \d+:\d+\.\d+$/m, log);
        assert.match(log, /^FLUXTIME fluxstart wall time \d+:\d+\.\d+$/m, log);
      },
    },
  ];
  // All at once: four brokers each, one node.
  for (const c of cases) await env.apply(await localized(c.fixture, c.name));
  for (const c of cases) c.check(await succeededLog(env, c.name));
}, { timeoutMs: 300_000 });
