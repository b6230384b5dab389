/**
 * withDefaults and validateSpec (api/), checked against the CRD itself: a small model of the
 * apiserver's structural defaulting walks crds/minicluster.yaml, so a default added to the CRD
 * but not to withDefaults (or with another value) fails here.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  DEFAULT_BACKOFF_LIMIT,
  DEFAULTS,
  type MiniCluster,
  validateSpec,
  withDefaults,
} from "../../api/mod.ts";

import { resolveSettings } from "../../controllers/minicluster/children/scripts/parts/settings.ts";
import { buildJob } from "../../controllers/minicluster/children/job.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";

const ROOT = new URL("../../", import.meta.url);
const VALID_DIR = new URL("tests/fixtures/manifests/valid/", ROOT);

type Json = Record<string, unknown>;
type Schema = {
  type?: string;
  default?: unknown;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
};

const crd = parse(await Deno.readTextFile(new URL("crds/minicluster.yaml", ROOT)));
const schema: Schema = crd.spec.versions[0].schema.openAPIV3Schema;

/** The apiserver's defaulting: a missing property with a default gets it, then children are walked. */
function schemaDefaults(node: Schema, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => node.items ? schemaDefaults(node.items, v) : v);
  if (value === null || typeof value !== "object") return value;
  const out: Json = { ...(value as Json) };
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    if (out[key] === undefined && child.default !== undefined) {
      out[key] = structuredClone(child.default);
    }
    if (out[key] !== undefined) out[key] = schemaDefaults(child, out[key]);
  }
  if (typeof node.additionalProperties === "object") {
    for (const key of Object.keys(out)) {
      if (!(key in (node.properties ?? {}))) {
        out[key] = schemaDefaults(node.additionalProperties, out[key]);
      }
    }
  }
  return out;
}

/** Every leaf of `part` is present with the same value in `whole`. */
function assertSubset(part: unknown, whole: unknown, path = "") {
  if (part !== null && typeof part === "object" && !Array.isArray(part)) {
    assert.ok(whole !== null && typeof whole === "object", `${path}: expected an object`);
    for (const [k, v] of Object.entries(part)) assertSubset(v, (whole as Json)[k], `${path}.${k}`);
  } else if (Array.isArray(part)) {
    assert.ok(Array.isArray(whole) && whole.length === part.length, `${path}: list differs`);
    part.forEach((v, i) => assertSubset(v, (whole as unknown[])[i], `${path}[${i}]`));
  } else {
    assert.deepEqual(whole, part, path);
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

async function validFixtures(): Promise<[string, MiniCluster][]> {
  const out: [string, MiniCluster][] = [];
  for await (const entry of Deno.readDir(VALID_DIR)) {
    if (!entry.name.endsWith(".yaml")) continue;
    out.push([entry.name, parse(await Deno.readTextFile(new URL(entry.name, VALID_DIR)))]);
  }
  return out.sort(([a], [b]) => a.localeCompare(b));
}

const mc = (spec: MiniCluster["spec"], name = "sample"): MiniCluster => ({
  apiVersion: "flux-framework.org/v1alpha2",
  kind: "MiniCluster",
  metadata: { name, namespace: "default" },
  spec,
});

Deno.test("withDefaults of a minimal MiniCluster fills every CRD and derived default", () => {
  const { spec } = withDefaults(mc({ containers: [{ command: "hostname" }] }));
  assert.deepEqual(spec, {
    containers: [{
      command: "hostname",
      image: "ghcr.io/rse-ops/accounting:app-latest",
      pullAlways: false,
      runFlux: true,
    }],
    services: [],
    network: { headlessName: "sample" },
    jobLabels: {},
    jobAnnotations: {},
    interactive: false,
    flux: {
      container: {
        image: "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble",
        name: "flux-view",
        mountPath: "/mnt/flux",
        disable: false,
        pullAlways: false,
        viewFrom: "Auto",
      },
      // No spec.flux, so no CRD default for it (as in the Go operator): Flux's own applies.
      connectTimeout: "",
      logLevel: 6,
      scheduler: { queuePolicy: "fcfs" },
    },
    logging: { quiet: false, strict: false, debug: false, zeromq: false, timed: false },
    cleanup: false,
    size: 1,
    maxSize: 1,
    backoffLimit: DEFAULT_BACKOFF_LIMIT,
    tasks: 1,
    deadlineSeconds: 31_500_000,
    pod: { labels: {}, annotations: {} },
  });
});

Deno.test("withDefaults agrees with the CRD's defaults on every valid fixture", async () => {
  const fixtures = await validFixtures();
  assert.ok(fixtures.length >= 20);
  for (const [file, manifest] of fixtures) {
    const byServer = schemaDefaults(schema, manifest) as MiniCluster;
    const ours = withDefaults(manifest);
    // Everything the apiserver would store is what withDefaults says...
    assertSubset(byServer, ours, file);
    // ...and defaulting what the apiserver stored changes nothing further.
    assert.deepEqual(withDefaults(byServer), ours, file);
  }
});

Deno.test("DEFAULTS holds the CRD's default values", () => {
  const spec = schema.properties!.spec.properties!;
  const flux = spec.flux.properties!;
  assert.equal(spec.size.default, DEFAULTS.size);
  assert.equal(spec.tasks.default, DEFAULTS.tasks);
  assert.equal(spec.deadlineSeconds.default, DEFAULTS.deadlineSeconds);
  assert.equal(spec.containers.items!.properties!.image.default, DEFAULTS.containerImage);
  assert.equal(flux.container.properties!.image.default, DEFAULTS.fluxViewImage);
  assert.equal(flux.container.properties!.name.default, DEFAULTS.fluxViewName);
  assert.equal(flux.container.properties!.mountPath.default, DEFAULTS.fluxViewMountPath);
  assert.equal(flux.connectTimeout.default, DEFAULTS.connectTimeout);
  assert.equal(flux.logLevel.default, DEFAULTS.logLevel);
  assert.equal(flux.scheduler.properties!.queuePolicy.default, DEFAULTS.queuePolicy);
  assert.equal(
    flux.bursting.properties!.leadBroker.properties!.port.default,
    DEFAULTS.leadBrokerPort,
  );
});

Deno.test("withDefaults is pure and idempotent", async () => {
  for (const [file, manifest] of await validFixtures()) {
    const frozen = deepFreeze(structuredClone(manifest));
    const once = withDefaults(frozen);
    assert.deepEqual(frozen, manifest, `${file}: input changed`);
    assert.deepEqual(withDefaults(once), once, `${file}: not idempotent`);
  }
});

Deno.test("withDefaults: maxSize 0 or unset means size; backoffLimit 0 or unset means 100", () => {
  assert.equal(withDefaults(mc({ size: 3, containers: [{}] })).spec.maxSize, 3);
  assert.equal(withDefaults(mc({ size: 3, maxSize: 0, containers: [{}] })).spec.maxSize, 3);
  assert.equal(withDefaults(mc({ size: 3, maxSize: 6, containers: [{}] })).spec.maxSize, 6);
  assert.equal(withDefaults(mc({ backoffLimit: 0, containers: [{}] })).spec.backoffLimit, 100);
  assert.equal(withDefaults(mc({ backoffLimit: 4, containers: [{}] })).spec.backoffLimit, 4);
});

Deno.test("withDefaults: headless name defaults to the MiniCluster's name", () => {
  assert.equal(
    withDefaults(mc({ containers: [{}] }, "lammps")).spec.network.headlessName,
    "lammps",
  );
  const given = withDefaults(
    mc({ network: { headlessName: "net", disableAffinity: true }, containers: [{}] }),
  );
  assert.deepEqual(given.spec.network, { headlessName: "net", disableAffinity: true });
});

Deno.test("withDefaults: a lone container runs Flux, others say so explicitly", () => {
  const lone = withDefaults(mc({ containers: [{ runFlux: false }] }));
  assert.equal(lone.spec.containers[0].runFlux, true);
  const two = withDefaults(mc({
    containers: [{ name: "a" }, { name: "b", runFlux: true }],
    services: [{ name: "db" }],
  }));
  assert.deepEqual(two.spec.containers.map((c) => c.runFlux), [false, true]);
  assert.equal(two.spec.services[0].runFlux, false);
  assert.equal(two.spec.services[0].image, DEFAULTS.containerImage);
});

Deno.test("withDefaults: bursting clusters are named burst-N and sized like the MiniCluster", () => {
  const { spec } = withDefaults(mc({
    size: 4,
    flux: { bursting: { clusters: [{}, { name: "cloud", size: 2 }, { size: 0 }] } },
    containers: [{}],
  }));
  assert.deepEqual(spec.flux.bursting?.clusters, [
    { name: "burst-0", size: 4 },
    { name: "cloud", size: 2 },
    { name: "burst-2", size: 4 },
  ]);
  const lead = withDefaults(mc({
    flux: { bursting: { leadBroker: { address: "10.0.0.1", name: "lead", size: 2 } } },
    containers: [{}],
  }));
  assert.equal(lead.spec.flux.bursting?.leadBroker?.port, 8050);
});

Deno.test("withDefaults: volumes get readOnly and emptyDir false", () => {
  const { spec } = withDefaults(mc({
    containers: [{ volumes: { data: { path: "/data", claimName: "pvc" } } }],
  }));
  assert.deepEqual(spec.containers[0].volumes, {
    data: { path: "/data", claimName: "pvc", readOnly: false, emptyDir: false },
  });
});

Deno.test("withDefaults needs metadata.name", () => {
  assert.throws(() => withDefaults({ spec: { containers: [{}] } }), /metadata.name/);
});

/** Valid fixtures the apiserver accepts but the reconciler must report (Go operator examples). */
const ACCEPTED_BUT_UNRECONCILABLE: Record<string, RegExp> = {
  // A volume with only a path: the Go operator makes a PVC without a claim name of it.
  "go-tests-batch.yaml": /volume "data" has no source/,
};

Deno.test("validateSpec accepts every valid fixture", async () => {
  for (const [file, manifest] of await validFixtures()) {
    const problems = validateSpec(manifest);
    const known = ACCEPTED_BUT_UNRECONCILABLE[file];
    if (known) {
      assert.equal(problems.length, 1, file);
      assert.match(problems[0], known);
    } else {
      assert.deepEqual(problems, [], file);
    }
  }
});

Deno.test("what the Go operator's Python SDK sends for unset fields means unset", () => {
  const manifest = mc({
    tasks: 0,
    flux: { connectTimeout: "", scheduler: { queuePolicy: "" } },
    containers: [{ name: "", image: "app", command: "hostname" }],
  }, "sdk");
  const defaulted = withDefaults({ ...manifest, metadata: { ...manifest.metadata, uid: "u" } });
  // Kept as stored (the apiserver stores the ""s), read as unset by the builders.
  assert.equal(defaulted.spec.tasks, 0);
  assert.equal(defaulted.spec.flux.connectTimeout, "");
  const settings = resolveSettings(defaulted, specSizing(defaulted));
  assert.equal(settings.flux.queuePolicy, "fcfs");
  assert.equal(settings.flux.connectTimeout, "");
  assert.equal(
    buildJob(defaulted, specSizing(defaulted)).spec?.template.spec?.containers[0].name,
    "sdk",
  );
  assert.deepEqual(validateSpec(defaulted), []);
  // No spec.flux: Flux's connect timeout; a given one: the CRD's default.
  assert.equal(withDefaults(mc({ containers: [{}] })).spec.flux.connectTimeout, "");
  assert.equal(withDefaults(mc({ containers: [{}], flux: {} })).spec.flux.connectTimeout, "5s");
});

Deno.test("validateSpec: flux mini, removed in flux-core 0.59, is refused wherever it runs", () => {
  const problems = validateSpec(mc({
    flux: { submitCommand: "flux mini submit" },
    containers: [
      {
        runFlux: true,
        command: "flux mini run -n 2 hostname",
        commands: { pre: "echo hi\nflux  mini batch job.sh", post: "echo myflux mini" },
      },
      { name: "side", lifeCycle: { postStartExec: "sh -c 'flux mini alloc'" } },
    ],
  }));
  assert.deepEqual(problems.map((p) => p.split(" ")[0]), [
    "spec.flux.submitCommand",
    "spec.containers[0].command",
    "spec.containers[0].commands.pre",
    "spec.containers[1].lifeCycle.postStartExec",
  ]);
  assert.match(problems[0], /removed in 0\.59 .*drop "mini" \(flux submit, flux run/);
  assert.deepEqual(validateSpec(mc({ containers: [{ command: "flux submit hostname" }] })), []);
});

Deno.test("validateSpec: pod.resources is refused with the reason (Go made it an overhead)", () => {
  const problems = validateSpec(mc({ containers: [{}], pod: { resources: { cpu: 2 } } }));
  assert.equal(problems.length, 1);
  assert.match(problems[0], /^spec\.pod\.resources is not supported: .*overhead/);
  assert.deepEqual(validateSpec(mc({ containers: [{}], pod: { resources: {} } })), []);
});

Deno.test("validateSpec: a volume needs a source", () => {
  const problems = validateSpec(mc({ containers: [{ volumes: { data: { path: "/data" } } }] }));
  assert.deepEqual(problems, [
    'spec.containers[0].volumes: volume "data" has no source; set one of claimName, hostPath, configMapName, secretName, csiDriver or emptyDir: true',
  ]);
});

Deno.test("validateSpec: volume names must be DNS labels", () => {
  const problems = validateSpec(mc({
    containers: [{ volumes: { Data_1: { path: "/data", claimName: "pvc" } } }],
  }));
  assert.equal(problems.length, 1);
  assert.match(problems[0], /volume name "Data_1" must be a DNS label/);
});

Deno.test("validateSpec: one volume name must mean one volume across containers", () => {
  const problems = validateSpec(mc({
    containers: [
      { name: "a", runFlux: true, volumes: { data: { path: "/data", claimName: "one" } } },
      { name: "b", volumes: { data: { path: "/data", claimName: "two" } } },
    ],
  }));
  assert.equal(problems.length, 1);
  assert.match(problems[0], /spec\.containers\[1\]\.volumes: volume "data" is defined differently/);
  // Nested maps count too.
  const configMap = (items: Record<string, string>) => ({ path: "/c", configMapName: "cm", items });
  assert.equal(
    validateSpec(mc({
      containers: [
        { name: "a", runFlux: true, volumes: { c: configMap({ x: "x", y: "y" }) } },
        { name: "b", volumes: { c: configMap({ x: "x", y: "z" }) } },
      ],
    })).length,
    1,
  );
  assert.deepEqual(
    validateSpec(mc({
      containers: [
        { name: "a", runFlux: true, volumes: { c: configMap({ x: "x", y: "y" }) } },
        { name: "b", volumes: { c: configMap({ y: "y", x: "x" }) } },
      ],
    })),
    [],
  );
  // The same definition in two containers is fine (key order does not matter).
  assert.deepEqual(
    validateSpec(mc({
      containers: [
        { name: "a", runFlux: true, volumes: { data: { path: "/d", claimName: "one" } } },
        { name: "b", volumes: { data: { claimName: "one", path: "/d" } } },
      ],
    })),
    [],
  );
});

Deno.test("validateSpec: names may not collide with the Flux view", () => {
  const problems = validateSpec(mc({
    containers: [{ name: "flux-view", volumes: { "flux-view": { path: "/x", emptyDir: true } } }],
  }));
  assert.equal(problems.length, 2);
  assert.match(problems[0], /spec\.containers\[0\]\.name "flux-view" is the name of the Flux view/);
  assert.match(problems[1], /volume name "flux-view" is taken by the Flux view volume/);
});

Deno.test("validateSpec: volume names the operator uses in every pod are reserved", () => {
  const volume = { path: "/x", emptyDir: true };
  const problems = validateSpec(mc({
    flux: { mungeSecret: "munge" },
    containers: [{
      volumes: {
        "spack-software": volume,
        "flux-operator-home": volume,
        "sample-entrypoint": volume,
        "sample-curve-cert": volume,
        "munge-key": volume,
        "fine": volume,
      },
    }],
  }));
  assert.deepEqual(problems.map((p) => p.match(/"([^"]+)" is taken/)?.[1]), [
    "spack-software",
    "flux-operator-home",
    "sample-entrypoint",
    "sample-curve-cert",
    "munge-key",
  ]);
  // munge-key is free without a munge secret.
  assert.deepEqual(
    validateSpec(mc({ containers: [{ volumes: { "munge-key": volume } }] })),
    [],
  );
});

Deno.test("validateSpec: the Service of a container with ports needs a short enough name", () => {
  const long = "a".repeat(40);
  const problems = validateSpec(mc({
    containers: [{ runFlux: true }, { name: "b".repeat(30), ports: [80] }],
  }, long));
  assert.equal(problems.length, 1);
  assert.match(problems[0], /longer than 63 characters/);
});

Deno.test("validateSpec: burst cluster names are unique and not the MiniCluster's own", () => {
  const problems = validateSpec(mc({
    flux: { bursting: { clusters: [{ name: "x" }, { name: "x" }, { name: "sample" }] } },
    containers: [{}],
  }));
  assert.equal(problems.length, 2);
  assert.match(problems[0], /clusters\[1\]\.name "x" is used twice/);
  assert.match(problems[1], /clusters\[2\]\.name "sample" is this MiniCluster's own name/);
  // A burst target is one of the lead's burst clusters: naming itself there is the point (its
  // pods must be in the hostlist), as the Go operator's bursting examples do.
  assert.deepEqual(
    validateSpec(mc({
      flux: {
        bursting: {
          leadBroker: { address: "10.0.0.1", name: "lead", size: 2 },
          clusters: [{ name: "sample", size: 2 }],
        },
      },
      containers: [{}],
    })),
    [],
  );
  // Defaulted names burst-0, burst-1 never collide.
  assert.deepEqual(
    validateSpec(mc({ flux: { bursting: { clusters: [{}, {}] } }, containers: [{}] })),
    [],
  );
});

Deno.test("validateSpec refuses pod labels and annotations the operator or the Job controller set", () => {
  const owned = [
    "job-name",
    "controller-uid",
    "batch.kubernetes.io/job-completion-index",
    "batch.kubernetes.io/job-name",
    "batch.kubernetes.io/controller-uid",
    "flux-framework.org/minicluster",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/name",
    "hpa-selector",
  ];
  for (const key of owned) {
    const problems = validateSpec(mc({ pod: { labels: { [key]: "other" } }, containers: [{}] }));
    assert.equal(problems.length, 1, key);
    assert.match(problems[0], new RegExp(`spec\\.pod\\.labels: "${key}" is set by`), key);
  }
  const annotations = [
    "batch.kubernetes.io/job-completion-index",
    "flux-framework.org/desired-hash",
  ];
  for (const key of annotations) {
    const problems = validateSpec(mc({ pod: { annotations: { [key]: "x" } }, containers: [{}] }));
    assert.equal(problems.length, 1, key);
    assert.match(problems[0], new RegExp(`spec\\.pod\\.annotations: "${key}" is set by`), key);
  }
  // Look-alikes that are the user's own stay allowed.
  assert.deepEqual(
    validateSpec(mc({
      pod: {
        labels: {
          "my-job-name": "x",
          "app.kubernetes.io/part-of": "x",
          "example.com/job-name": "x",
        },
        annotations: { "kubectl.kubernetes.io/default-container": "x" },
      },
      containers: [{}],
    })),
    [],
  );
});
