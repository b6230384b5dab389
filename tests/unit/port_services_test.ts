import assert from "node:assert/strict";
import type { MiniClusterSpec } from "../../api/mod.ts";
import { buildPortServices } from "../../controllers/minicluster/children/port_services.ts";
import { assertGolden } from "../golden.ts";
import { defaultedMiniCluster } from "./fixtures.ts";

const miniCluster = defaultedMiniCluster;

const spec: MiniClusterSpec = {
  containers: [
    { image: "ubuntu:noble", runFlux: true, command: "curl -s localhost", ports: [8080] },
    { name: "nginx", image: "nginx", noWrapEntrypoint: true, ports: [80, 443, 80] },
    { name: "worker", image: "busybox", command: "sleep 1" },
    { name: "db", image: "postgres", ports: [5432] },
  ],
};

Deno.test("per-container Services golden", async () => {
  await assertGolden("service/port-services.yaml", buildPortServices(miniCluster(spec)));
});

Deno.test("per-container Services: non-Flux containers with ports only, prefixed by the MiniCluster", () => {
  const names = buildPortServices(miniCluster(spec)).map((s) => s.metadata!.name);
  assert.deepEqual(names, ["flux-sample-nginx", "flux-sample-db"]);
  const other = buildPortServices(miniCluster(spec, "other")).map((s) => s.metadata!.name);
  assert.deepEqual(other, ["other-nginx", "other-db"], "two MiniClusters do not collide");
});

Deno.test("per-container Services: each port once, target = port, selecting the Job's pods", () => {
  const [nginx] = buildPortServices(miniCluster(spec));
  assert.deepEqual(nginx.spec!.ports!.map((p) => [p.port, p.targetPort]), [[80, 80], [443, 443]]);
  assert.deepEqual(nginx.spec!.selector, {
    "job-name": "flux-sample",
    "flux-framework.org/minicluster": "flux-sample",
  });
});

Deno.test("per-container Services: none for a single (Flux) container", () => {
  const mc = miniCluster({ containers: [{ image: "nginx", ports: [80] }] });
  assert.deepEqual(buildPortServices(mc), []);
});
