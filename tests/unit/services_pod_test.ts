import assert from "node:assert/strict";
import type { MiniClusterSpec } from "../../api/mod.ts";
import { buildServicesPod } from "../../controllers/minicluster/children/services_pod.ts";
import { assertGolden } from "../golden.ts";
import { defaultedMiniCluster } from "./fixtures.ts";

const miniCluster = defaultedMiniCluster;

const servicesSpec: MiniClusterSpec = {
  size: 2,
  network: { headlessName: "flux-net" },
  containers: [{ image: "ghcr.io/rse-ops/fireworks:tag-mamba", imagePullSecret: "app-creds" }],
  services: [
    {
      name: "mongo",
      image: "mongo",
      ports: [27017],
      environment: { MONGO_INITDB_ROOT_USERNAME: "admin" },
      secrets: { MONGO_INITDB_ROOT_PASSWORD: { name: "mongo", key: "password" } },
    },
    {
      name: "nginx",
      image: "nginx",
      imagePullSecret: "nginx-creds",
      command: "nginx -g 'daemon off;'",
      volumes: {
        "nginx-conf": {
          configMapName: "nginx-conf",
          path: "/etc/nginx/conf.d",
          items: { "flux.conf": "flux.conf" },
        },
      },
    },
  ],
  pod: {
    labels: { "example.com/group": "a" },
    annotations: { "example.com/note": "services" },
    serviceAccountName: "flux-runner",
    tolerations: [{ key: "launcher", operator: "Exists", effect: "NoSchedule" }],
    nodeAffinity: { "example.com/pool": ["services"] },
    hostPID: true,
    resources: { cpu: 1 },
  },
};

Deno.test("services pod golden", async () => {
  await assertGolden("service/services-pod.yaml", buildServicesPod(miniCluster(servicesSpec)));
});

Deno.test("services pod: none without spec.services", () => {
  assert.equal(
    buildServicesPod(miniCluster({ containers: [{ image: "rockylinux:9" }] })),
    undefined,
  );
});

Deno.test("services pod: named <name>-services in the headless subdomain", () => {
  const pod = buildServicesPod(miniCluster(servicesSpec))!;
  assert.equal(pod.metadata!.name, "flux-sample-services");
  assert.equal(pod.spec!.hostname, "flux-sample-services");
  assert.equal(pod.spec!.subdomain, "flux-net");
  assert.equal(pod.spec!.setHostnameAsFQDN, false);
});

Deno.test("services pod: not counted by the scale selector, not taken for a Job pod", () => {
  const labels = buildServicesPod(miniCluster(servicesSpec))!.metadata!.labels!;
  assert.equal(labels["hpa-selector"], undefined);
  assert.equal(labels["job-name"], undefined);
  assert.equal(labels["batch.kubernetes.io/job-completion-index"], undefined);
  assert.equal(labels["example.com/group"], "a");
});

Deno.test("services pod: no Flux scripts, no host namespaces, no overhead, only its own volumes", () => {
  const pod = buildServicesPod(miniCluster(servicesSpec))!;
  assert.equal(pod.spec!.initContainers, undefined);
  assert.equal(pod.spec!.hostPID, undefined);
  assert.equal(pod.spec!.overhead, undefined);
  assert.deepEqual(pod.spec!.volumes!.map((v) => v.name), ["nginx-conf"]);
  for (const c of pod.spec!.containers) {
    assert.ok(!(c.command ?? []).some((a) => a.startsWith("/flux_operator")));
  }
});

Deno.test("services pod: a service without a name is refused", () => {
  const mc = miniCluster({ containers: [{ image: "a" }], services: [{ image: "mongo" }] });
  assert.throws(() => buildServicesPod(mc), /spec\.services\[0\] needs a name/);
});

Deno.test("services pod: an AppArmor annotation naming a Job container stays off it", () => {
  const apparmor = "container.apparmor.security.beta.kubernetes.io/";
  const pod = buildServicesPod(miniCluster({
    containers: [{ image: "app", runFlux: true }, { name: "side", image: "app" }],
    services: [{ name: "api", image: "nginx" }],
    pod: {
      annotations: {
        [`${apparmor}flux-sample`]: "runtime/default",
        [`${apparmor}side`]: "runtime/default",
        [`${apparmor}flux-view`]: "runtime/default",
        [`${apparmor}api`]: "localhost/api-profile",
        "example.com/note": "every pod",
      },
    },
  }))!;
  // The apiserver refuses a pod whose AppArmor annotation names a container it does not have.
  assert.deepEqual(pod.metadata!.annotations, {
    [`${apparmor}api`]: "localhost/api-profile",
    "example.com/note": "every pod",
  });
});
