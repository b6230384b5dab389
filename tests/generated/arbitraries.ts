/**
 * fast-check arbitraries of valid MiniCluster specs and of changes to them, in the manner of Acto:
 * values come from the CRD schema (enums, bounds, defaults in crds/minicluster.yaml) and the
 * cross-field rules the CRD enforces with CEL (maxSize ≥ size, one Flux container, unique
 * container names, DNS-label names) hold by construction, so every generated spec is one the
 * apiserver accepts (the integration test checks that with a dry-run create first).
 *
 * The fields covered are the ones the consistency oracle (oracle.ts) knows where to find in the
 * children: size and maxSize, tasks, logging, interactive, the network, flux options, the Flux
 * container's command, environment and volumes, a sidecar with ports, service containers, Job
 * and pod labels, deadline and backoff limit.
 */
import fc from "fast-check";
import type { MiniClusterSpec } from "../../api/mod.ts";
import { boundsOf, enumOf } from "./crd_schema.ts";

export type Spec = MiniClusterSpec;

/** hack/cluster/kwok_stages.ts: a Job pod with this annotation stays Running. */
const KEEP_RUNNING = "kwok.x-k8s.io/keep-running";

const IMAGES = [
  "ghcr.io/rse-ops/accounting:app-latest",
  "ghcr.io/converged-computing/metric-lammps:latest",
];

/** Lower case DNS label of a few characters, starting with a letter. */
const label = (prefix: string) =>
  fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/).map((s) => `${prefix}${s}`);

/** Values a user may well put in a command or an environment value. */
const freeText = fc.oneof(
  fc.constantFrom(
    "hello",
    "a b  c",
    "$(hostname)",
    "`id`",
    "it's",
    '"quoted"',
    "ünïcødé ✨",
    "x;y|z&",
    "",
    // Control characters YAML and TOML refuse raw (apply bodies, broker.toml), and their kin.
    "del\u007f c1\u0080\u009f nel\u0085",
    "bom\ufeff ls\u2028 ps\u2029 nonchar\uffff",
    "tab\t cr\r esc\u001b",
    // Shell and TOML metacharacters: continuations, quotes, brackets, comments.
    "ends in \\",
    "a\\\nb",
    `"]} [x] = 'y' # z \\"`,
    "$'\\x41' ${X:-y} $((1+2))",
  ),
  fc.string({ maxLength: 12 }),
  // Any code point but NUL (which no shell value can hold; the corpus reports it).
  fc.string({ unit: "binary", maxLength: 8 }).map((v) => v.replaceAll("\0", "")),
);

const commands = fc.constantFrom(
  "hostname",
  "echo hello world",
  "lmp -v x 2 -in in.reaxc.hns",
  "sleep 1",
  "python3 -c 'print(1)'",
  "",
  // Operators are the job's words; a trailing continuation continues into nothing.
  "echo a; echo b | wc -c > /dev/null & true # c",
  "hostname \\",
  "echo del\u007f nel\u0085 ls\u2028",
);

const envName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/);
const environment = fc.dictionary(envName, freeText, { maxKeys: 4 });

const volume = fc.oneof(
  fc.record({ path: label("/data-"), emptyDir: fc.constant(true) }),
  fc.record({ path: label("/claim-"), claimName: label("pvc-") }),
  fc.record({ path: label("/conf-"), configMapName: label("cm-") }),
  fc.record({ path: label("/secret-"), secretName: label("secret-") }),
  fc.record({ path: label("/host-"), hostPath: label("/srv/") }),
);
/** Volume names that can never be the operator's own (reserved names are validated out). */
const volumes = fc.dictionary(label("vol-"), volume, { maxKeys: 3 })
  .filter((vs) => new Set(Object.values(vs).map((v) => v.path)).size === Object.keys(vs).length);

const [portMin, portMax] = boundsOf("spec.containers[].ports[]", 65535);
const ports = fc.array(fc.integer({ min: Math.max(portMin, 1024), max: portMax }), {
  maxLength: 3,
});

const fluxContainer = fc.record({
  image: fc.constantFrom(...IMAGES),
  command: commands,
  environment,
  volumes,
}, { requiredKeys: ["image"] });

const sidecar = fc.record({
  name: fc.constant("side"),
  image: fc.constant("busybox"),
  command: fc.constantFrom("echo side", "sleep 100"),
  ports,
  environment,
}, { requiredKeys: ["name", "image"] });

const labels = fc.dictionary(label("k-"), label("v-"), { maxKeys: 3 });

const [logMin, logMax] = boundsOf("spec.flux.logLevel", 7);

const logging = fc.record({
  quiet: fc.boolean(),
  strict: fc.boolean(),
  debug: fc.boolean(),
  zeromq: fc.boolean(),
}, { requiredKeys: [] });

const flux = fc.record({
  logLevel: fc.integer({ min: logMin, max: logMax }),
  minimalService: fc.boolean(),
  scheduler: fc.record({
    queuePolicy: fc.constantFrom(...enumOf("spec.flux.scheduler.queuePolicy")),
  }),
  connectTimeout: fc.integer({ min: 1, max: 60 }).map((n) => `${n}s`),
}, { requiredKeys: [] });

/** size 1-4 and, when set, maxSize in [size, 6] (the CRD's maxSize rule). */
const sizes = fc.integer({ min: 1, max: 4 }).chain((size) =>
  fc.record({
    size: fc.constant(size),
    maxSize: fc.option(fc.integer({ min: size, max: 6 }), { nil: undefined }),
  })
);

export const specArbitrary: fc.Arbitrary<Spec> = fc.record({
  sizes,
  tasks: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
  interactive: fc.option(fc.boolean(), { nil: undefined }),
  logging: fc.option(logging, { nil: undefined }),
  headlessName: fc.option(label("h-"), { nil: undefined }),
  flux: fc.option(flux, { nil: undefined }),
  main: fluxContainer,
  side: fc.option(sidecar, { nil: undefined }),
  services: fc.boolean(),
  jobLabels: fc.option(labels, { nil: undefined }),
  podLabels: fc.option(labels, { nil: undefined }),
  deadlineSeconds: fc.option(fc.integer({ min: 60, max: 1_000_000 }), { nil: undefined }),
  backoffLimit: fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }),
}).map((g) => {
  const spec: Record<string, unknown> = {
    size: g.sizes.size,
    containers: g.side ? [{ ...g.main, runFlux: true }, g.side] : [g.main],
  };
  if (g.sizes.maxSize !== undefined) spec.maxSize = g.sizes.maxSize;
  if (g.tasks !== undefined) spec.tasks = g.tasks;
  if (g.interactive !== undefined) spec.interactive = g.interactive;
  if (g.logging) spec.logging = g.logging;
  if (g.headlessName) spec.network = { headlessName: g.headlessName };
  if (g.flux) spec.flux = g.flux;
  if (g.services) spec.services = [{ name: "svc", image: "redis" }];
  if (g.jobLabels) spec.jobLabels = g.jobLabels;
  // KWOK (the test cluster's kubelet) completes a Job's pods after a second unless told to keep
  // them running; a finished Job cannot be scaled or changed, and the sequences change it.
  spec.pod = {
    annotations: { [KEEP_RUNNING]: "true" },
    ...(g.podLabels ? { labels: g.podLabels } : {}),
  };
  if (g.deadlineSeconds !== undefined) spec.deadlineSeconds = g.deadlineSeconds;
  if (g.backoffLimit !== undefined) spec.backoffLimit = g.backoffLimit;
  return spec as unknown as Spec;
});

/** A change to a spec: a name for the log and the new spec (still valid for the CRD). */
export interface Change {
  what: string;
  apply(spec: Spec): Spec;
}

const clone = (spec: Spec): Spec => structuredClone(spec);
type Container = Spec["containers"][number];
const main = (spec: Spec): Container =>
  spec.containers.find((c) => c.runFlux) ?? spec.containers[0];

const changeArbitrary: fc.Arbitrary<Change> = fc.oneof(
  fc.integer({ min: 1, max: 6 }).map((size) => ({
    what: `size → ${size}`,
    apply: (s: Spec) => {
      const n = clone(s);
      n.size = size;
      // Keep the CRD's rule; the operator still clamps to the bootstrapped maximum.
      if (n.maxSize && n.maxSize < size) n.maxSize = size;
      return n;
    },
  })),
  commands.map((command) => ({
    what: `command → ${JSON.stringify(command)}`,
    apply: (s: Spec) => {
      const n = clone(s);
      main(n).command = command;
      return n;
    },
  })),
  environment.map((env) => ({
    what: `environment → ${JSON.stringify(env)}`,
    apply: (s: Spec) => {
      const n = clone(s);
      main(n).environment = env;
      return n;
    },
  })),
  volumes.map((vs) => ({
    what: `volumes → ${Object.keys(vs).join(",") || "none"}`,
    apply: (s: Spec) => {
      const n = clone(s);
      main(n).volumes = vs;
      return n;
    },
  })),
  fc.boolean().map((on) => ({
    what: `services ${on ? "on" : "off"}`,
    apply: (s: Spec) => {
      const n = clone(s);
      if (on) n.services = [{ name: "svc", image: "redis" }];
      else delete n.services;
      return n;
    },
  })),
  logging.map((l) => ({
    what: `logging → ${JSON.stringify(l)}`,
    apply: (s: Spec) => ({ ...clone(s), logging: l }),
  })),
  fc.option(label("h-"), { nil: undefined }).map(headlessChange),
  fc.integer({ min: 0, max: 8 }).map((tasks) => ({
    what: `tasks → ${tasks}`,
    apply: (s: Spec) => ({ ...clone(s), tasks }),
  })),
  labels.map((l) => ({
    what: `jobLabels → ${JSON.stringify(l)}`,
    apply: (s: Spec) => ({ ...clone(s), jobLabels: l }),
  })),
  fc.integer({ min: 60, max: 1_000_000 }).map((d) => ({
    what: `deadlineSeconds → ${d}`,
    apply: (s: Spec) => ({ ...clone(s), deadlineSeconds: d }),
  })),
  fc.boolean().map((m) => ({
    what: `minimalService → ${m}`,
    apply: (s: Spec) => {
      const n = clone(s);
      n.flux = { ...n.flux, minimalService: m };
      return n;
    },
  })),
  ports.map((p) => ({
    what: `sidecar ports → ${JSON.stringify(p)}`,
    apply: (s: Spec) => {
      const n = clone(s);
      const side = n.containers.find((c) => !c.runFlux && c.name);
      if (side) side.ports = p;
      return n;
    },
  })),
  // Suspending and resuming, also around template changes the running Job cannot take.
  fc.boolean().map(suspendChange),
  fc.constantFrom(...IMAGES).map(imageChange),
);

function suspendChange(on: boolean): Change {
  return {
    what: `suspend → ${on ? "true" : "unset"}`,
    apply: (s: Spec) => {
      const n = clone(s);
      if (on) n.suspend = true;
      else delete n.suspend;
      return n;
    },
  };
}

function imageChange(image: string): Change {
  return {
    what: `image → ${image}`,
    apply: (s: Spec) => {
      const n = clone(s);
      main(n).image = image;
      return n;
    },
  };
}

function headlessChange(h: string | undefined): Change {
  return {
    what: `headlessName → ${h ?? "unset"}`,
    apply: (s: Spec) => {
      const n = clone(s);
      if (h) n.network = { ...n.network, headlessName: h };
      else delete n.network;
      return n;
    },
  };
}

/** A sequence: the first spec, then the changes to make one after the other. */
export const sequenceArbitrary = fc.record({
  spec: specArbitrary,
  changes: fc.array(changeArbitrary, { minLength: 2, maxLength: 5 }),
});

/**
 * Sequences run besides the sampled ones, whatever the seed: a running Job's pod template that
 * cannot change while it is suspended and resumed, and renames of the headless Service.
 */
export function scriptedSequences(): { spec: Spec; changes: Change[] }[] {
  const spec = (extra: Partial<Spec> = {}): Spec => ({
    size: 2,
    containers: [{ image: IMAGES[0], command: "hostname" }],
    pod: { annotations: { [KEEP_RUNNING]: "true" } },
    ...extra,
  });
  return [
    {
      spec: spec({ suspend: true }),
      changes: [imageChange(IMAGES[1]), suspendChange(false), suspendChange(true)],
    },
    {
      spec: spec(),
      changes: [
        imageChange(IMAGES[1]),
        suspendChange(true),
        imageChange(IMAGES[0]),
        suspendChange(false),
      ],
    },
    {
      spec: spec({ network: { headlessName: "h-first" } }),
      changes: [headlessChange("h-second"), headlessChange(undefined), headlessChange("h-first")],
    },
  ];
}
