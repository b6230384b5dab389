import assert from "node:assert/strict";
import { type MiniClusterSpec, withDefaults } from "../../api/mod.ts";
import {
  commonPodOptions,
  imagePullSecrets,
  jobAffinity,
  jobOnlyPodOptions,
  jobPodLabels,
  orderedPodSpec,
  servicesPodLabels,
} from "../../controllers/minicluster/children/pod/pod.ts";
import { pullPolicy } from "../../controllers/minicluster/children/pod/pull_policy.ts";

function miniCluster(spec: Partial<MiniClusterSpec>) {
  return withDefaults({
    metadata: { name: "flux-sample", namespace: "flux-operator", uid: "u-1" },
    spec: { containers: [{ image: "rockylinux:9" }], ...spec },
  });
}

Deno.test("jobPodLabels: the operator's labels win over the user's", () => {
  const labels = jobPodLabels(
    miniCluster({ pod: { labels: { "hpa-selector": "mine", team: "a" } } }),
  );
  assert.equal(labels["hpa-selector"], "flux-sample");
  assert.equal(labels.team, "a");
  assert.equal(labels["app.kubernetes.io/name"], "flux-sample");
});

Deno.test("servicesPodLabels: no HPA selector label (the scale selector counts Job pods)", () => {
  const labels = servicesPodLabels(miniCluster({}));
  assert.equal(labels["hpa-selector"], undefined);
  assert.equal(labels["flux-framework.org/minicluster"], "flux-sample");
});

Deno.test("jobAffinity: default spreading unless disabled; node affinity either way", () => {
  const spread = jobAffinity(miniCluster({}))!;
  assert.equal(
    spread.podAntiAffinity!.preferredDuringSchedulingIgnoredDuringExecution![0].podAffinityTerm
      .topologyKey,
    "kubernetes.io/hostname",
  );
  assert.equal(
    spread.podAffinity!.preferredDuringSchedulingIgnoredDuringExecution![0].podAffinityTerm
      .topologyKey,
    "topology.kubernetes.io/zone",
  );
  assert.equal(jobAffinity(miniCluster({ network: { disableAffinity: true } })), undefined);
  const required = jobAffinity(
    miniCluster({
      network: { disableAffinity: true },
      pod: { nodeAffinity: { zone: ["a", "b"], arch: ["amd64"] } },
    }),
  )!;
  assert.equal(required.podAntiAffinity, undefined);
  assert.deepEqual(
    required.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms,
    [{
      matchExpressions: [
        { key: "arch", operator: "In", values: ["amd64"] },
        { key: "zone", operator: "In", values: ["a", "b"] },
      ],
    }],
  );
});

Deno.test("commonPodOptions: OnFailure and no token by default (Go parity)", () => {
  assert.deepEqual(commonPodOptions(miniCluster({})), {
    restartPolicy: "OnFailure",
    automountServiceAccountToken: false,
  });
});

Deno.test("commonPodOptions: the whole pod security context is passed on", () => {
  const sc = { fsGroup: 1, runAsUser: 2, runAsNonRoot: true };
  assert.deepEqual(
    commonPodOptions(miniCluster({ pod: { securityContext: sc } })).securityContext,
    sc,
  );
});

Deno.test("jobOnlyPodOptions: no pod overhead from pod.resources (admission would reject the pods)", () => {
  const opts = jobOnlyPodOptions(miniCluster({ pod: { resources: { memory: "500M", cpu: 4 } } }));
  assert.equal(opts.overhead, undefined);
  assert.deepEqual(jobOnlyPodOptions(miniCluster({})), {});
  assert.deepEqual(jobOnlyPodOptions(miniCluster({ pod: { hostIPC: true } })), { hostIPC: true });
});

Deno.test("imagePullSecrets: each once, in order, none when empty", () => {
  const c = (imagePullSecret?: string) => ({
    image: "x",
    pullAlways: false,
    runFlux: false,
    imagePullSecret,
  });
  assert.deepEqual(imagePullSecrets([c("a"), c(), c("b"), c("a")], ["view", undefined]), [
    { name: "a" },
    { name: "b" },
    { name: "view" },
  ]);
  assert.equal(imagePullSecrets([c()]), undefined);
});

Deno.test("pullPolicy: pullAlways > imagePullPolicy > IfNotPresent", () => {
  assert.equal(pullPolicy({ pullAlways: true, imagePullPolicy: "Never" }), "Always");
  assert.equal(pullPolicy({ imagePullPolicy: "Never" }), "Never");
  assert.equal(pullPolicy({}), "IfNotPresent");
});

Deno.test("orderedPodSpec: fixed field order whatever the input order", () => {
  const spec = orderedPodSpec({ volumes: [], containers: [], subdomain: "s", hostname: "h" });
  assert.deepEqual(Object.keys(spec), ["hostname", "subdomain", "containers", "volumes"]);
});
