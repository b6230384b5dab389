import assert from "node:assert/strict";
import {
  brokerSelector,
  buildHeadlessService,
  headlessSelector,
} from "../../controllers/minicluster/children/service.ts";
import { buildJob } from "../../controllers/minicluster/children/job.ts";
import { buildPortServices } from "../../controllers/minicluster/children/port_services.ts";
import { buildServicesPod } from "../../controllers/minicluster/children/services_pod.ts";
import { assertGolden } from "../golden.ts";
import { defaultedMiniCluster } from "./fixtures.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";

const miniCluster = defaultedMiniCluster;

const containers = [{ image: "rockylinux:9", command: "hostname" }];

Deno.test("headless Service golden: default name", async () => {
  await assertGolden("service/headless.yaml", buildHeadlessService(miniCluster({ containers })));
});

Deno.test("headless Service golden: custom headless name", async () => {
  const mc = miniCluster({ containers, network: { headlessName: "flux-net" } });
  await assertGolden("service/headless-custom-name.yaml", buildHeadlessService(mc));
});

Deno.test("minimal Service golden: port 8050 on the lead broker only", async () => {
  const mc = miniCluster({ containers, flux: { minimalService: true } });
  await assertGolden("service/minimal.yaml", buildHeadlessService(mc));
});

/** Does a label selector match these labels (equality selectors only, as Services use)? */
function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

Deno.test("headless Service selects the Job's pods and the services pod", () => {
  const mc = miniCluster({ containers, services: [{ name: "db", image: "mongo" }] });
  const selector = buildHeadlessService(mc).spec!.selector!;
  assert.deepEqual(selector, headlessSelector(mc));
  assert.ok(selects(selector, buildJob(mc, specSizing(mc)).spec!.template.metadata!.labels!));
  assert.ok(selects(selector, buildServicesPod(mc)!.metadata!.labels!));
  assert.equal(buildHeadlessService(mc).spec!.clusterIP, "None");
});

Deno.test("minimal Service selects index 0 of this Job only, with the Job controller's labels", () => {
  const mc = miniCluster({ containers, flux: { minimalService: true } });
  const svc = buildHeadlessService(mc);
  assert.deepEqual(svc.spec!.selector, brokerSelector(mc));
  const ours = {
    ...buildJob(mc, specSizing(mc)).spec!.template.metadata!.labels!,
    "job-name": "flux-sample",
  };
  const broker = { ...ours, "batch.kubernetes.io/job-completion-index": "0" };
  const worker = { ...ours, "batch.kubernetes.io/job-completion-index": "1" };
  const other = { "job-name": "other", "batch.kubernetes.io/job-completion-index": "0" };
  assert.ok(selects(svc.spec!.selector!, broker));
  assert.ok(!selects(svc.spec!.selector!, worker));
  assert.ok(!selects(svc.spec!.selector!, other));
  assert.equal(svc.spec!.clusterIP, undefined);
  assert.deepEqual(svc.spec!.ports!.map((p) => p.port), [8050]);
});

Deno.test("no Service of a MiniCluster selects another MiniCluster's pods, whatever their labels", () => {
  // Another MiniCluster's pods carry every label a user could copy, but the MiniCluster label
  // with their own name: the operator sets it and refuses it in spec.pod.labels.
  const spoofed = {
    "job-name": "flux-sample",
    "batch.kubernetes.io/job-name": "flux-sample",
    "batch.kubernetes.io/job-completion-index": "0",
    "app.kubernetes.io/name": "flux-sample",
    "hpa-selector": "flux-sample",
    "flux-framework.org/minicluster": "other",
  };
  const db = { name: "db", image: "mongo", ports: [27017] };
  for (
    const mc of [
      miniCluster({ containers, flux: { minimalService: true } }),
      miniCluster({ containers: [{ ...containers[0], runFlux: true }, db] }),
      miniCluster({ containers }),
    ]
  ) {
    const services = [buildHeadlessService(mc), ...buildPortServices(mc)];
    for (const svc of services) {
      assert.ok(!selects(svc.spec!.selector!, spoofed), svc.metadata!.name);
      // The Job's own pods: the template's labels plus the Job controller's.
      const pod = {
        ...buildJob(mc, specSizing(mc)).spec!.template.metadata!.labels!,
        "job-name": "flux-sample",
        "batch.kubernetes.io/job-completion-index": "0",
      };
      assert.ok(selects(svc.spec!.selector!, pod), svc.metadata!.name);
    }
  }
});

Deno.test("headless Service: name and subdomain of the Job agree", () => {
  const mc = miniCluster({ containers, network: { headlessName: "flux-net" } });
  assert.equal(buildHeadlessService(mc).metadata!.name, "flux-net");
  assert.equal(buildJob(mc, specSizing(mc)).spec!.template.spec!.subdomain, "flux-net");
});
