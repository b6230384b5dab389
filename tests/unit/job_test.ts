import assert from "node:assert/strict";
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Container } from "kubernetes-types/core/v1.d.ts";
import type { MiniClusterSpec } from "../../api/mod.ts";
import { jobPodGroup } from "../../controllers/minicluster/children/gang.ts";
import { buildJob } from "../../controllers/minicluster/children/job.ts";
import { LEAD_FAILED_EXIT_CODE } from "../../controllers/minicluster/children/scripts/lead-finished.ts";
import { assertGolden } from "../golden.ts";
import { defaultedMiniCluster, specSized } from "./fixtures.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";

const miniCluster = defaultedMiniCluster;

/** Freezes an object graph, so a builder that writes to its input throws. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

const cases: Record<string, MiniClusterSpec> = {
  minimal: { size: 4, containers: [{ image: "rockylinux:9", command: "echo hello world" }] },
  "multi-container": {
    size: 2,
    containers: [
      {
        image: "ghcr.io/rse-ops/lammps:flux-sched-focal",
        runFlux: true,
        command: "lmp -in in.reaxc",
      },
      { name: "nginx", image: "nginx", noWrapEntrypoint: true, ports: [80, 443] },
      { name: "sidecar", image: "ubuntu:noble", command: "sleep infinity", ports: [9000] },
      { name: "plain", image: "busybox", noWrapEntrypoint: true, command: "echo $HOME && sleep 1" },
    ],
  },
  "container-options": {
    shareProcessNamespace: true,
    containers: [{
      image: "rockylinux:9",
      name: "ignored-for-the-flux-container",
      command: "hostname",
      workingDir: "/data",
      imagePullPolicy: "Never",
      imagePullSecret: "registry-creds",
      environment: { ZETA: "last", ALPHA: "first" },
      secrets: { TOKEN: { name: "api-token", key: "token" } },
      lifeCycle: { postStartExec: "echo started > /tmp/started", preStopExec: "/usr/bin/cleanup" },
      resources: { limits: { cpu: 2, memory: "1Gi" }, requests: { cpu: "500m" } },
      securityContext: { privileged: true, capabilities: { add: ["SYS_ADMIN"] } },
    }],
  },
  "every-volume-kind": {
    containers: [{
      image: "rockylinux:9",
      command: "ls /data",
      volumes: {
        "host-data": { hostPath: "/tmp/workflow", path: "/data" },
        "config": {
          configMapName: "my-config",
          path: "/etc/app",
          items: { "b.conf": "b/b.conf", "a.conf": "a.conf" },
        },
        "claim": { claimName: "data-pvc", path: "/claim", readOnly: true },
        "creds": { secretName: "my-secret", path: "/secrets", readOnly: true },
        "shm": { emptyDir: true, emptyDirMedium: "memory", emptyDirSizeLimit: "64Gi" },
        "scratch": { emptyDir: true, path: "/scratch" },
        "csi": {
          csiDriver: "gcsfuse.csi.storage.gke.io",
          csiDriverAttributes: { mountOptions: "implicit-dirs", bucketName: "my-bucket" },
          path: "/bucket",
        },
      },
    }],
  },
  "pod-options": {
    size: 3,
    containers: [{ image: "rockylinux:9", command: "hostname" }],
    pod: {
      annotations: { "example.com/b": "two", "example.com/a": "one" },
      labels: { "example.com/group": "group-a" },
      restartPolicy: "Never",
      serviceAccountName: "flux-runner",
      runtimeClassName: "gvisor",
      automountServiceAccountToken: true,
      schedulerName: "fluence",
      nodeSelector: { "node.kubernetes.io/instance-type": "c2d-standard-8" },
      nodeAffinity: { "example.com/pool": ["hpc", "hpc-spot"] },
      tolerations: [
        { key: "launcher", operator: "Exists", effect: "NoSchedule" },
        { key: "gpu", operator: "Equal", value: "true", effect: "NoExecute" },
      ],
      dnsPolicy: "ClusterFirstWithHostNet",
      hostIPC: true,
      hostPID: true,
      resources: { cpu: 4, memory: "500M" },
      securityContext: {
        fsGroup: 1000,
        runAsUser: 1000,
        sysctls: [{ name: "net.core.somaxconn", value: "1024" }],
      },
    },
  },
  "disable-affinity": {
    containers: [{ image: "rockylinux:9" }],
    network: { disableAffinity: true },
    pod: { nodeAffinity: { "example.com/pool": ["hpc"] } },
  },
  "disable-view": {
    containers: [{
      image: "ghcr.io/converged-computing/flux-slim:noble",
      command: "flux resource list",
    }],
    flux: {
      container: {
        disable: true,
        name: "flux-config",
        mountPath: "/opt/flux-config",
        image: "ghcr.io/converged-computing/flux-view-rocky:tag-9",
        pullAlways: true,
        workingDir: "/tmp",
        imagePullSecret: "view-creds",
        resources: { limits: { cpu: "1" } },
        securityContext: { runAsUser: 0 },
      },
    },
  },
  "custom-headless-name": {
    size: 2,
    network: { headlessName: "flux-net" },
    containers: [{ image: "rockylinux:9", command: "hostname" }],
  },
  "job-labels": {
    size: 2,
    maxSize: 8,
    backoffLimit: 3,
    deadlineSeconds: 3600,
    jobLabels: {
      "kueue.x-k8s.io/queue-name": "user-queue",
      "app.kubernetes.io/managed-by": "someone",
    },
    containers: [{ image: "rockylinux:9", command: "hostname" }],
  },
  "queued": {
    size: 4,
    suspend: true,
    ttlSecondsAfterFinished: 600,
    jobLabels: { "kueue.x-k8s.io/queue-name": "user-queue" },
    jobAnnotations: {
      "kueue.x-k8s.io/elastic-job": "true",
      "example.com/owner": "team-a",
    },
    pod: { priorityClassName: "hpc-high" },
    containers: [{ image: "rockylinux:9", command: "hostname" }],
  },
  gang: { size: 4, gang: {}, containers: [{ image: "rockylinux:9", command: "hostname" }] },
  "gang-elastic": {
    size: 4,
    minSize: 2,
    maxSize: 8,
    gang: {},
    containers: [{ image: "rockylinux:9", command: "hostname" }],
  },
  drain: {
    size: 4,
    flux: { drainGracePeriodSeconds: 300 },
    containers: [{ image: "rockylinux:9", lifeCycle: { preStopExec: "echo bye" } }],
  },
  "munge-secret": {
    flux: { mungeSecret: "munge-key" },
    containers: [
      { image: "rockylinux:9", runFlux: true, command: "hostname" },
      { name: "api", image: "rockylinux:9", command: "sleep 10" },
    ],
  },
};

for (const [name, spec] of Object.entries(cases)) {
  Deno.test(`buildJob golden: ${name}`, async () => {
    await assertGolden(`job/${name}.yaml`, buildJob(...specSized(deepFreeze(miniCluster(spec)))));
  });
}

function podSpec(job: Job) {
  return job.spec!.template.spec!;
}

const allContainers = (job: Job): Container[] => [
  ...(podSpec(job).initContainers ?? []),
  ...podSpec(job).containers,
];

Deno.test("buildJob: every mount names a volume of the pod, no path is mounted twice", () => {
  for (const spec of Object.values(cases)) {
    const job = buildJob(...specSized(miniCluster(spec)));
    const volumes = new Set(podSpec(job).volumes!.map((v) => v.name));
    assert.equal(volumes.size, podSpec(job).volumes!.length, "volume names are unique");
    for (const c of allContainers(job)) {
      const paths = (c.volumeMounts ?? []).map((m) => m.mountPath);
      assert.equal(new Set(paths).size, paths.length, `${c.name}: mount paths are unique`);
      for (const m of c.volumeMounts ?? []) {
        assert.ok(volumes.has(m.name), `${c.name} mounts ${m.name}`);
      }
    }
  }
});

Deno.test("buildJob: Indexed, completions = parallelism = size, pods in the headless subdomain", () => {
  const job = buildJob(...specSized(miniCluster(cases["custom-headless-name"])));
  assert.equal(job.spec!.completionMode, "Indexed");
  assert.equal(job.spec!.completions, 2);
  assert.equal(job.spec!.parallelism, 2);
  assert.equal(podSpec(job).subdomain, "flux-net");
  assert.equal(podSpec(job).setHostnameAsFQDN, false);
});

Deno.test("buildJob: pods at the sizing's effective size, not spec.size (the reconciler clamps)", () => {
  const mc = miniCluster({ ...cases.minimal, size: 4, maxSize: 6 });
  const job = buildJob(mc, { effectiveSize: 2, maximumSize: 6 });
  assert.equal(mc.spec.size, 4);
  assert.equal(job.spec!.completions, 2);
  assert.equal(job.spec!.parallelism, 2);
});

Deno.test("buildJob: with spec.gang the pods name the MiniCluster's PodGroup, unless unganged", () => {
  const containers = cases.minimal.containers;
  assert.equal(
    jobPodGroup(buildJob(...specSized(miniCluster(cases.minimal)))),
    undefined,
    "no gang unless asked",
  );
  const ganged = miniCluster({ size: 4, gang: {}, containers });
  assert.equal(jobPodGroup(buildJob(ganged, specSizing(ganged))), "flux-sample");
  assert.equal(jobPodGroup(buildJob(ganged, specSizing(ganged), { unganged: true })), undefined);
});

Deno.test("buildJob: defaults backoffLimit 100 and deadline 31500000", () => {
  const job = buildJob(...specSized(miniCluster(cases.minimal)));
  assert.equal(job.spec!.backoffLimit, 100);
  assert.equal(job.spec!.activeDeadlineSeconds, 31500000);
});

Deno.test("buildJob: the Flux container is named after the MiniCluster and runs its wait script", () => {
  const job = buildJob(...specSized(miniCluster(cases["multi-container"])));
  const [flux, nginx, sidecar, plain] = podSpec(job).containers;
  assert.equal(flux.name, "flux-sample");
  assert.deepEqual(flux.command, ["/bin/bash", "/flux_operator/wait-0.sh"]);
  assert.equal(nginx.command, undefined, "noWrapEntrypoint without a command keeps the image's");
  assert.deepEqual(sidecar.command, ["/bin/bash", "/flux_operator/start-2.sh"]);
  assert.deepEqual(plain.command, ["/bin/sh", "-c", "echo $HOME && sleep 1"]);
});

Deno.test("buildJob: the init container stays when the view is disabled (it writes the config)", () => {
  const job = buildJob(...specSized(miniCluster(cases["disable-view"])));
  const [init] = podSpec(job).initContainers!;
  assert.equal(init.name, "flux-config");
  assert.deepEqual(init.command, ["/bin/bash", "/flux_operator/flux-init.sh"]);
  assert.equal(init.imagePullPolicy, "Always");
});

Deno.test("buildJob: child labels win over jobLabels; pod labels keep the user's", () => {
  const job = buildJob(...specSized(miniCluster(cases["job-labels"])));
  assert.equal(job.metadata!.labels!["app.kubernetes.io/managed-by"], "minicluster-operator");
  assert.equal(job.metadata!.labels!["kueue.x-k8s.io/queue-name"], "user-queue");
  const labels = job.spec!.template.metadata!.labels!;
  assert.equal(labels["hpa-selector"], "flux-sample");
  assert.equal(labels["app.kubernetes.io/name"], "flux-sample");
  const pod = buildJob(...specSized(miniCluster(cases["pod-options"]))).spec!.template.metadata!
    .labels!;
  assert.equal(pod["example.com/group"], "group-a");
});

Deno.test("buildJob: controller ownerReference to the MiniCluster", () => {
  const job = buildJob(...specSized(miniCluster(cases.minimal)));
  assert.deepEqual(job.metadata!.ownerReferences, [{
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    name: "flux-sample",
    uid: "5b0c7a0e-8f3e-4a53-9a1f-0c2d1e4f6a7b",
    controller: true,
    blockOwnerDeletion: true,
  }]);
  assert.equal(job.metadata!.namespace, "flux-operator");
});

Deno.test("buildJob: a failed run of the lead broker fails the Job at once (podFailurePolicy)", () => {
  const job = buildJob(...specSized(miniCluster({
    size: 2,
    containers: [{ image: "app", runFlux: true, command: "mpirun ./a.out" }, {
      name: "side",
      image: "app",
    }],
  })));
  assert.equal(job.spec!.template.spec!.restartPolicy, "Never");
  assert.deepEqual(job.spec!.podFailurePolicy, {
    rules: [{
      action: "FailJob",
      onExitCodes: {
        containerName: "flux-sample",
        operator: "In",
        values: [LEAD_FAILED_EXIT_CODE],
      },
    }],
  });
  // With restartPolicy OnFailure the API allows no podFailurePolicy: the script fails each
  // restart of the lead broker at once instead (scripts/lead-finished.ts).
  const onFailure = buildJob(...specSized(miniCluster({
    containers: [{ image: "app", runFlux: true }],
    pod: { restartPolicy: "OnFailure" },
  })));
  assert.equal(onFailure.spec!.template.spec!.restartPolicy, "OnFailure");
  assert.equal(onFailure.spec!.podFailurePolicy, undefined);
});

Deno.test("buildJob: deterministic and JSON-clean (no undefined left for apply)", () => {
  for (const spec of Object.values(cases)) {
    const a = buildJob(...specSized(miniCluster(spec)));
    const b = buildJob(...specSized(miniCluster(spec)));
    assert.deepEqual(a, b);
    assert.deepEqual(JSON.parse(JSON.stringify(a)), a);
  }
});

Deno.test("buildJob: a user volume named like an operator volume is refused", () => {
  const mc = miniCluster({
    containers: [{ image: "rockylinux:9", volumes: { "flux-view": { emptyDir: true } } }],
  });
  assert.throws(() => buildJob(mc, specSizing(mc)), /flux-view/);
});

Deno.test("buildJob: a container named like the Flux container or the view is refused", () => {
  const clash = miniCluster({
    containers: [{ image: "a", runFlux: true }, { name: "flux-sample", image: "b" }],
  });
  assert.throws(
    () => buildJob(clash, specSizing(clash)),
    /container name flux-sample is used twice/,
  );
  const view = miniCluster({
    containers: [{ image: "a", runFlux: true }, { name: "flux-view", image: "b" }],
  });
  assert.throws(() => buildJob(view, specSizing(view)), /container name flux-view is used twice/);
});

Deno.test("buildJob: a user volume on an operator path (or two on one path) is refused", () => {
  const mc = miniCluster({
    containers: [{ image: "a", volumes: { sw: { hostPath: "/sw", path: "/opt/software" } } }],
  });
  assert.throws(
    () => buildJob(mc, specSizing(mc)),
    /mount path of container flux-sample: \/opt\/software/,
  );
  const shm = miniCluster({
    containers: [{ image: "a", volumes: { a: { emptyDir: true }, b: { emptyDir: true } } }],
  });
  assert.throws(() => buildJob(shm, specSizing(shm)), /\/dev\/shm is used twice/);
});

Deno.test("buildJob: a non-Flux container without a name is refused", () => {
  const mc = miniCluster({
    containers: [{ image: "a", runFlux: true }, { image: "b" }],
  });
  assert.throws(() => buildJob(mc, specSizing(mc)), /spec\.containers\[1\] needs a name/);
});

Deno.test("buildJob: an AppArmor annotation naming a services container stays off the pods", () => {
  const apparmor = "container.apparmor.security.beta.kubernetes.io/";
  const job = buildJob(...specSized(miniCluster({
    containers: [{ image: "app", runFlux: true }, { name: "side", image: "app" }],
    services: [{ name: "api", image: "nginx" }],
    pod: {
      annotations: {
        [`${apparmor}flux-sample`]: "runtime/default",
        [`${apparmor}side`]: "unconfined",
        [`${apparmor}flux-view`]: "runtime/default",
        [`${apparmor}api`]: "localhost/api-profile",
        "example.com/note": "every pod",
      },
    },
  })));
  // The apiserver refuses a pod template whose AppArmor annotation names a container it lacks.
  assert.deepEqual(job.spec!.template.metadata!.annotations, {
    [`${apparmor}flux-sample`]: "runtime/default",
    [`${apparmor}flux-view`]: "runtime/default",
    [`${apparmor}side`]: "unconfined",
    "example.com/note": "every pod",
  });
});
