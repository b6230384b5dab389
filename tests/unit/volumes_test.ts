import assert from "node:assert/strict";
import { type MiniClusterSpec, withDefaults } from "../../api/mod.ts";
import { buildJob } from "../../controllers/minicluster/children/job.ts";
import { buildServicesPod } from "../../controllers/minicluster/children/services_pod.ts";
import {
  containerVolumeMounts,
  curveCertMode,
  entrypointItems,
  entrypointScriptPath,
  entrypointVolume,
  fluxEntrypointVolume,
  mungeMount,
  userVolume,
  userVolumes,
  wrapsEntrypoint,
} from "../../controllers/minicluster/children/pod/volumes.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";

function miniCluster(spec: MiniClusterSpec) {
  return withDefaults({
    metadata: { name: "flux-sample", namespace: "flux-operator", uid: "u-1" },
    spec,
  });
}

const dv = (v: Record<string, unknown>) => ({ readOnly: false, emptyDir: false, ...v });

Deno.test("entrypointItems: wait-<i> for Flux, start-<i> for wrapped containers, then the init script", () => {
  const mc = miniCluster({
    containers: [
      { name: "a", image: "x", noWrapEntrypoint: true },
      { image: "flux", runFlux: true },
      { name: "b", image: "y" },
    ],
    flux: { container: { name: "view" } },
  });
  assert.deepEqual(entrypointItems(mc), [
    { key: "wait-1", path: "wait-1.sh", mode: 0o755 },
    { key: "start-2", path: "start-2.sh", mode: 0o755 },
    { key: "view", path: "flux-init.sh", mode: 0o755 },
  ]);
  assert.equal(entrypointScriptPath(mc, "start-2"), "/flux_operator/start-2.sh");
  assert.throws(() => entrypointScriptPath(mc, "start-0"), /no key start-0/);
});

Deno.test("wrapsEntrypoint: only non-Flux containers without noWrapEntrypoint", () => {
  assert.equal(wrapsEntrypoint({ image: "x", pullAlways: false, runFlux: true }), false);
  assert.equal(wrapsEntrypoint({ image: "x", pullAlways: false, runFlux: false }), true);
  assert.equal(
    wrapsEntrypoint({ image: "x", pullAlways: false, runFlux: false, noWrapEntrypoint: true }),
    false,
  );
});

Deno.test("entrypointVolume: the scripts alone; fluxEntrypointVolume: the scripts and the curve Secret", () => {
  const mc = miniCluster({ containers: [{ image: "x" }] });
  const volume = entrypointVolume(mc);
  assert.equal(volume.name, "flux-sample-entrypoint");
  assert.deepEqual(volume.projected!.sources!.map((s) => s.configMap?.name), [
    "flux-sample-entrypoint",
  ]);
  const flux = fluxEntrypointVolume(mc);
  assert.equal(flux.name, "flux-sample-curve-cert");
  const [cm, secret] = flux.projected!.sources!;
  assert.deepEqual(cm, volume.projected!.sources![0]);
  assert.equal(secret.secret!.name, "flux-sample-curve-cert");
  assert.deepEqual(secret.secret!.items, [{ key: "curve.cert", path: "curve.cert", mode: 0o400 }]);
});

Deno.test("curveCertMode: 0400 for root or with an fsGroup, 0444 only for a non-root uid without one", () => {
  const mode = (spec: MiniClusterSpec) => curveCertMode(miniCluster(spec)).toString(8);
  const flux = (runAsUser?: number) => ({
    image: "x",
    runFlux: true,
    ...(runAsUser === undefined ? {} : { securityContext: { runAsUser } }),
  });
  // The image's user (root in the Flux images) or root named.
  assert.equal(mode({ containers: [flux()] }), "400");
  assert.equal(mode({ containers: [flux(0)] }), "400");
  assert.equal(mode({ containers: [flux()], pod: { securityContext: { runAsUser: 0 } } }), "400");
  // A non-root uid reads it through the fsGroup kubelet adds (0440 root:fsGroup) ...
  assert.equal(
    mode({ containers: [flux(1000)], pod: { securityContext: { fsGroup: 1000 } } }),
    "400",
  );
  // ... and without one only through "other".
  assert.equal(mode({ containers: [flux(1000)] }), "444");
  assert.equal(
    mode({ containers: [flux()], pod: { securityContext: { runAsUser: 1000 } } }),
    "444",
  );
  // The container's uid wins over the pod's.
  assert.equal(
    mode({ containers: [flux(0)], pod: { securityContext: { runAsUser: 1000 } } }),
    "400",
  );
  // A sidecar's uid does not matter: it never mounts the certificate.
  assert.equal(
    mode({
      containers: [flux(), { name: "side", image: "y", securityContext: { runAsUser: 1000 } }],
    }),
    "400",
  );
});

Deno.test("the CURVE certificate is mounted only into the Flux containers", () => {
  const mc = miniCluster({
    containers: [
      { image: "flux", runFlux: true },
      { name: "wrapped", image: "y" },
      { name: "bare", image: "z", noWrapEntrypoint: true },
    ],
  });
  const job = buildJob(mc, specSizing(mc));
  const pod = job.spec!.template.spec!;
  const certVolumes = pod.volumes!.filter((v) =>
    v.projected?.sources?.some((s) => s.secret?.name === "flux-sample-curve-cert")
  ).map((v) => v.name);
  assert.deepEqual(certVolumes, ["flux-sample-curve-cert"]);
  const mounting = [...pod.initContainers!, ...pod.containers]
    .filter((c) => c.volumeMounts?.some((m) => certVolumes.includes(m.name)))
    .map((c) => c.name);
  assert.deepEqual(mounting, ["flux-sample"]);
  // Every container still finds its scripts at /flux_operator.
  for (const c of [...pod.initContainers!, ...pod.containers]) {
    assert.ok(c.volumeMounts!.some((m) => m.mountPath === "/flux_operator/"), c.name);
  }
  const services = buildServicesPod(miniCluster({
    containers: [{ image: "flux" }],
    services: [{ name: "db", image: "db" }],
  }));
  assert.ok(!JSON.stringify(services).includes("curve"));
});

Deno.test("without a Flux container no volume holds the certificate", () => {
  const mc = miniCluster({
    containers: [{ name: "a", image: "x" }, { name: "b", image: "y" }],
  });
  assert.ok(
    !JSON.stringify(buildJob(mc, specSizing(mc)).spec!.template.spec!.volumes).includes("curve"),
  );
});

Deno.test("userVolume: the Go operator's precedence csi > secret > emptyDir > hostPath > configMap > claim", () => {
  const all = dv({
    csiDriver: "d",
    secretName: "s",
    emptyDir: true,
    hostPath: "/h",
    configMapName: "c",
    claimName: "p",
    path: "/x",
  });
  assert.ok(userVolume("v", all).csi);
  assert.ok(userVolume("v", { ...all, csiDriver: undefined }).secret);
  assert.ok(userVolume("v", { ...all, csiDriver: undefined, secretName: undefined }).emptyDir);
  const noEmpty = { ...all, csiDriver: undefined, secretName: undefined, emptyDir: false };
  assert.deepEqual(userVolume("v", noEmpty).hostPath, { path: "/h", type: "Directory" });
  assert.ok(userVolume("v", { ...noEmpty, hostPath: undefined }).configMap);
  assert.deepEqual(
    userVolume("v", { ...noEmpty, hostPath: undefined, configMapName: undefined }),
    { name: "v", persistentVolumeClaim: { claimName: "p" } },
  );
  assert.throws(() => userVolume("v", dv({ path: "/x" })), /volume v names no source/);
});

Deno.test("userVolume: a ConfigMap volume keeps its own name (mounts use it), items by key", () => {
  const v = userVolume(
    "conf",
    dv({ configMapName: "nginx-conf", items: { z: "z.conf", a: "a.conf" }, path: "/etc" }),
  );
  assert.deepEqual(v, {
    name: "conf",
    configMap: {
      name: "nginx-conf",
      items: [{ key: "a", path: "a.conf" }, { key: "z", path: "z.conf" }],
    },
  });
  assert.deepEqual(userVolume("c", dv({ configMapName: "m", path: "/m" })), {
    name: "c",
    configMap: { name: "m" },
  });
});

Deno.test("userVolume: emptyDir medium only for memory, sizeLimit as given", () => {
  assert.deepEqual(userVolume("e", dv({ emptyDir: true })), { name: "e", emptyDir: {} });
  assert.deepEqual(
    userVolume("e", dv({ emptyDir: true, emptyDirMedium: "memory", emptyDirSizeLimit: "1Gi" })),
    { name: "e", emptyDir: { medium: "Memory", sizeLimit: "1Gi" } },
  );
});

Deno.test("userVolumes: one per name across containers, sorted, the later definition wins", () => {
  const volumes = userVolumes([
    { image: "a", pullAlways: false, runFlux: true, volumes: { b: dv({ secretName: "one" }) } },
    {
      image: "b",
      pullAlways: false,
      runFlux: false,
      volumes: { b: dv({ secretName: "two" }), a: dv({ emptyDir: true }) },
    },
  ]);
  assert.deepEqual(volumes.map((v) => v.name), ["a", "b"]);
  assert.equal(volumes[1].secret!.secretName, "two");
});

Deno.test("containerVolumeMounts: emptyDir defaults to /dev/shm, others need a path, readOnly kept", () => {
  const mounts = containerVolumeMounts({
    image: "a",
    pullAlways: false,
    runFlux: true,
    volumes: {
      shm: dv({ emptyDir: true }),
      data: dv({ claimName: "pvc", path: "/data", readOnly: true }),
      scratch: dv({ emptyDir: true, path: "/scratch" }),
    },
  });
  assert.deepEqual(mounts, [
    { name: "data", mountPath: "/data", readOnly: true },
    { name: "scratch", mountPath: "/scratch" },
    { name: "shm", mountPath: "/dev/shm" },
  ]);
  assert.throws(
    () =>
      containerVolumeMounts({
        name: "c",
        image: "a",
        pullAlways: false,
        runFlux: true,
        volumes: { data: dv({ claimName: "pvc" }) },
      }),
    /volume data of container c needs a path/,
  );
});

Deno.test("mungeMount: the key file only, unless the user mounts /etc/munge already", () => {
  const mc = miniCluster({ containers: [{ image: "x" }], flux: { mungeSecret: "munge" } });
  assert.deepEqual(mungeMount(mc, []), {
    name: "munge-key",
    mountPath: "/etc/munge/munge.key",
    subPath: "munge.key",
    readOnly: true,
  });
  assert.equal(mungeMount(mc, [{ name: "mine", mountPath: "/etc/munge/" }]), undefined);
  assert.equal(mungeMount(miniCluster({ containers: [{ image: "x" }] }), []), undefined);
});
