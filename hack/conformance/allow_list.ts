/**
 * The differences from the Go Flux Operator that are deliberate. Every entry says which text
 * documents it (`differences`: it must appear in docs/differences.md, "How it differs from the Go
 * Flux Operator") and where the migration guide gives the replacement (`guide`: it must appear in
 * docs/migrating-from-go.md); the suite fails when either is missing, when a difference
 * matches no entry, and (in a full run) when an entry matches nothing any more.
 *
 * Entries match narrowly: the kind of object and the path, and where it matters the values on both
 * sides, so that a new difference in the same place is not waved through.
 */
import type { Difference } from "./compare.ts";
import { LEAD_FINISHED_MARKER } from "../../controllers/minicluster/children/scripts/lead-finished.ts";

/** What an entry may look at besides the difference itself. */
export interface ManifestContext {
  /** The MiniCluster as written in the manifest. */
  spec: Record<string, unknown>;
  name: string;
  /** `Kind/name` of every child each side made. */
  goChildren: Set<string>;
  oursChildren: Set<string>;
  /** Our MiniCluster's conditions: "type=status reason: message". */
  oursConditions: string[];
}

export interface AllowEntry {
  id: string;
  /** Shown in the summary, one line per class. */
  class: string;
  /** Text of docs/differences.md that documents it. */
  differences: string;
  /** Text of docs/migrating-from-go.md that gives the replacement. */
  guide: string;
  matches(d: Difference, ctx: ManifestContext | undefined): boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);
const kindOf = (d: Difference) => d.object.split("/")[0];

/** Labels either operator puts on its children (Go's Job inherits its pod template's). */
const GO_LABELS = new Set(["app", "namespace", "job-index", "job-name"]);
const OUR_LABELS = new Set(["app.kubernetes.io/managed-by", "flux-framework.org/minicluster"]);
/** Labels Go's Job has because its own labels were empty and the apiserver copied the template's. */
const INHERITED_BY_GO_JOB = new Set([
  "app.kubernetes.io/name",
  "batch.kubernetes.io/controller-uid",
  "batch.kubernetes.io/job-name",
  "controller-uid",
  "hpa-selector",
]);
const HASH_ANNOTATIONS = new Set([
  "flux-framework.org/desired-hash",
  "flux-framework.org/template-hash",
]);

/** A label of `spec.pod.labels`, which Go's Job also inherited from its pod template. */
function inheritedPodLabel(ctx: ManifestContext | undefined, key: string, go: unknown): boolean {
  const pod = ctx?.spec.pod;
  return isObj(pod) && isObj(pod.labels) && pod.labels[key] === go;
}

function labelKey(path: string): string | undefined {
  return path.match(/^(?:spec\.template\.)?metadata\.labels\.(.+)$/)?.[1];
}

/** The manifest's containers' volumes, flattened. */
function volumes(ctx: ManifestContext | undefined): Obj[] {
  const containers = (ctx?.spec.containers ?? []) as Obj[];
  return containers.flatMap((c) => Object.values((c.volumes ?? {}) as Record<string, Obj>));
}

function hasLeadBroker(ctx: ManifestContext | undefined): boolean {
  const flux = ctx?.spec.flux as Obj | undefined;
  return isObj((flux?.bursting as Obj | undefined)?.leadBroker);
}

const oursRefusedSpec = (ctx: ManifestContext | undefined) =>
  ctx?.oursConditions.some((c) => c.startsWith("SpecInvalid=True")) ?? false;

/**
 * A container's flux calls with the resource set written Go's way: where ours encoded CPU cores
 * (`flux R encode --local` read by `flux R decode --count=gpu` and `--count=core`, then
 * `--hosts=H --cores=... [--gpus=...]`), the one `flux R encode --hosts=H --local` Go ran.
 * Undefined when ours did not encode cores.
 */
function withGoResourceSet(calls: string[][]): string[][] | undefined {
  const i = calls.findIndex((c) =>
    c[0] === "R" && c[1] === "encode" && c[2]?.startsWith("--hosts=") &&
    /^--cores=\d+(-\d+)?$/.test(c[3] ?? "")
  );
  if (i < 3) return undefined;
  const probe = calls.slice(i - 3, i).map((c) => c.join(" ")).sort();
  if (probe.join("|") !== "R decode --count=core|R decode --count=gpu|R encode --local") {
    return undefined;
  }
  const extra = calls[i].slice(4);
  if (extra.length > 1 || (extra.length === 1 && !/^--gpus=\d+(-\d+)?$/.test(extra[0]))) {
    return undefined;
  }
  return [...calls.slice(0, i - 3), ["R", "encode", calls[i][2], "--local"], ...calls.slice(i + 1)];
}

export const ALLOW_LIST: AllowEntry[] = [
  {
    id: "refused-at-apply",
    class: "validation",
    differences: "The CRD refuses at apply time what the Go operator accepted",
    guide: "## Manifests the CRD refuses",
    // Our invalid fixtures are the mistakes the CRD catches; Go's CRD admits each of them.
    matches: (d) =>
      d.kind === "admission" && d.manifest.startsWith("invalid/") && d.go === "admitted" &&
      d.ours !== "admitted",
  },
  {
    id: "spec-invalid",
    class: "validation",
    differences: "are `SpecInvalid` with the reason and no child",
    guide: "## Manifests the CRD refuses",
    // A spec that cannot work (a volume without a source, a certificate Flux refuses): Go writes
    // children until the apiserver or Flux refuses; ours writes none and says why.
    matches: (d, ctx) =>
      d.kind === "object" && d.go !== undefined && d.ours === undefined && oursRefusedSpec(ctx) &&
      // At most the workspace (a spec that fails to build is found after it is read or made).
      [...(ctx?.oursChildren ?? [])].every((c) => c === `MiniClusterWorkspace/${ctx?.name}`),
  },
  {
    id: "curve-cert-in-secret",
    class: "secrets",
    differences: "kept in a Secret (`<name>-curve-cert`)",
    guide: "## The CURVE certificate",
    matches: (d) =>
      (d.kind === "field" && kindOf(d) === "ConfigMap" && d.path === "data.curve.cert" &&
        d.go !== undefined && d.ours === undefined) ||
      (d.kind === "object" && /^Secret\/.+-curve-cert$/.test(d.object) && d.go === undefined) ||
      (d.kind === "field" && kindOf(d) === "Job" &&
        /^spec\.template\.spec\.volumes\[name=.+-entrypoint\]\.(configMap|projected)$/.test(
          d.path,
        )) ||
      // Only the Flux containers mount the certificate: their own volume of scripts and Secret.
      (d.kind === "field" && kindOf(d) === "Job" && d.go === undefined &&
        /^spec\.template\.spec\.volumes\[name=.+-curve-cert\]$/.test(d.path)) ||
      (d.kind === "field" && kindOf(d) === "Job" &&
        /^spec\.template\.spec\.containers\[name=[^\]]+\]\.volumeMounts\[name=.+-(entrypoint|curve-cert)\]$/
          .test(d.path) &&
        (d.go === undefined) !== (d.ours === undefined)),
  },
  {
    id: "success-on-lead-broker",
    class: "lifecycle",
    differences: "**The lead broker's success ends the Job.**",
    guide: "## Success and failure of the Job",
    matches: (d) =>
      d.kind === "field" && kindOf(d) === "Job" && d.path.startsWith("spec.successPolicy") &&
      d.go === undefined,
  },
  {
    id: "lead-broker-failure",
    class: "lifecycle",
    differences: "**A failed run of the lead broker fails the Job at once.**",
    guide: "## Exit codes",
    // The Job's podFailurePolicy, which the API allows only with restartPolicy Never and which
    // makes Failed the default podReplacementPolicy; the lead broker's pod keeps the marker of its
    // ended run in the shared volume (lead-finished.ts).
    matches: (d) =>
      (d.kind === "field" && kindOf(d) === "Job" &&
        ((d.path.startsWith("spec.podFailurePolicy") && d.go === undefined) ||
          (d.path === "spec.template.spec.restartPolicy" && d.go === "OnFailure" &&
            d.ours === "Never") ||
          (d.path === "spec.podReplacementPolicy" && d.go === "TerminatingOrFailed" &&
            d.ours === "Failed"))) ||
      (d.kind === "behaviour" && d.path.startsWith("files.") &&
        d.path.endsWith(`/${LEAD_FINISHED_MARKER}`) && d.go === undefined),
  },
  {
    // spec.jobAnnotations, spec.pod.priorityClassName and spec.gang (a PodGroup the pods name):
    // the Go CRD has none of them and drops them.
    id: "api-additions",
    class: "api",
    differences: "**Additions to the API.**",
    guide: "## Fields beyond the Go API",
    matches: (d, ctx) =>
      (d.kind === "object" && d.go === undefined && d.object === `PodGroup/${ctx?.name}`) ||
      (d.kind === "field" && kindOf(d) === "Job" && d.go === undefined &&
        (d.path === "spec.template.spec.priorityClassName" ||
          d.path === "spec.template.spec.schedulingGroup" ||
          (d.path === "metadata.annotations" && isObj(d.ours) &&
            Object.keys(d.ours).some((k) => !HASH_ANNOTATIONS.has(k)) &&
            Object.keys(d.ours).every((k) =>
              HASH_ANNOTATIONS.has(k) || !k.startsWith("flux-framework.org/")
            )))),
  },
  {
    id: "hash-annotations",
    class: "bookkeeping",
    differences: "`flux-framework.org/desired-hash`",
    guide: "## Labels and annotations",
    matches: (d) =>
      d.kind === "field" && d.path === "metadata.annotations" && d.go === undefined &&
      isObj(d.ours) && Object.keys(d.ours).every((k) => HASH_ANNOTATIONS.has(k)),
  },
  {
    id: "labels",
    class: "labels",
    differences: "**Labels are the operator's own.**",
    guide: "## Labels and annotations",
    matches: (d, ctx) => {
      if (d.kind !== "field") return false;
      if (d.path === "metadata.labels") {
        // A child Go leaves unlabelled, ours labelled with exactly our two labels.
        return d.go === undefined && isObj(d.ours) &&
          Object.keys(d.ours).every((k) => OUR_LABELS.has(k));
      }
      if (kindOf(d) === "Job" && /^spec\.template\.metadata\.(name|namespace)$/.test(d.path)) {
        return d.ours === undefined; // Go names the template; Kubernetes ignores it
      }
      const key = labelKey(d.path);
      if (key === undefined) return false;
      if (GO_LABELS.has(key)) return d.ours === undefined;
      if (OUR_LABELS.has(key)) return d.go === undefined;
      return kindOf(d) === "Job" && d.path.startsWith("metadata.") && d.ours === undefined &&
        (INHERITED_BY_GO_JOB.has(key) || inheritedPodLabel(ctx, key, d.go));
    },
  },
  {
    id: "service-selectors",
    class: "selectors",
    differences: "**Selectors are exact.**",
    guide: "## Services and selectors",
    matches: (d) =>
      d.kind === "field" && kindOf(d) === "Service" &&
      (/^spec\.selector\./.test(d.path) ||
        // <container> in Go, <name>-<container> here
        (d.path === "metadata.name" && typeof d.ours === "string" &&
          d.ours.endsWith(`-${d.go}`)) ||
        // named ports (Go's were unnamed)
        (/^spec\.ports\[port=\d+\]\.name$/.test(d.path) && d.go === undefined)),
  },
  {
    id: "not-ready-addresses",
    class: "dns",
    differences: "`publishNotReadyAddresses: true`",
    guide: "## Services and selectors",
    matches: (d) =>
      d.kind === "field" && kindOf(d) === "Service" && d.path === "spec.publishNotReadyAddresses" &&
      d.go === undefined && d.ours === true,
  },
  {
    id: "workspace",
    class: "scaling",
    differences: "fixed in a `MiniClusterWorkspace`",
    guide: "## Scaling",
    matches: (d, ctx) =>
      d.kind === "object" && d.go === undefined &&
      d.object === `MiniClusterWorkspace/${ctx?.name}` && isObj(d.ours) && isObj(d.ours.spec) &&
      "maxSize" in d.ours.spec,
  },
  {
    id: "configmap-volume-name",
    class: "pods",
    differences: "a ConfigMap volume is named after the volume",
    guide: "## Volumes",
    // Go named the volume after its ConfigMap, so the apiserver refused the Job (the mount names
    // the volume): only ours has a Job.
    matches: (d, ctx) =>
      d.kind === "object" && d.object.startsWith("Job/") && d.go === undefined &&
      volumes(ctx).some((v) => typeof v.configMapName === "string"),
  },
  {
    id: "empty-dir-path",
    class: "pods",
    differences: "an emptyDir volume is mounted at its `path`",
    guide: "## Volumes",
    matches: (d, ctx) => {
      const paths = volumes(ctx).filter((v) => v.emptyDir === true && typeof v.path === "string")
        .map((v) => v.path as string);
      if (d.kind === "field") {
        return kindOf(d) === "Job" && /\.volumeMounts\[name=[^\]]+\]\.mountPath$/.test(d.path) &&
          d.go === "/dev/shm" && paths.includes(d.ours as string);
      }
      // Go's scripts then create the directory the volume would have been mounted on.
      const file = d.kind === "behaviour" ? d.path.match(/^files\.[^:]+:(\/.*)$/)?.[1] : undefined;
      return file !== undefined && d.go === "directory" && d.ours === undefined &&
        paths.some((p) => p === file || p.startsWith(`${file}/`));
    },
  },
  {
    id: "empty-dir-medium",
    class: "pods",
    differences: "`emptyDirMedium: Memory` means memory",
    guide: "## Volumes",
    matches: (d) =>
      d.kind === "field" && kindOf(d) === "Job" && /\.emptyDir\.medium$/.test(d.path) &&
      d.go === undefined && d.ours === "Memory",
  },
  {
    id: "go-stops-at-first-error",
    class: "errors",
    differences:
      "the children that can be written are (the Go operator stopped at the first refusal",
    guide: "## Status and conditions",
    matches: (d, ctx) =>
      d.kind === "object" && d.go === undefined && !ctx?.goChildren.has(`Job/${ctx?.name}`) &&
      (ctx?.oursConditions.some((c) => c.startsWith("Unappliable=True")) ?? false),
  },
  {
    id: "exit-code",
    class: "exit-code",
    differences: "The Flux container exits with Flux's exit code",
    guide: "## Exit codes",
    // The launcher's program is missing in the sandbox: Flux returns 127 (the lead broker's
    // container then 79, lead-finished.ts), Go's script 0.
    matches: (d, ctx) =>
      d.kind === "behaviour" && d.path === `containers.${ctx?.name}.exit` && d.go === 0 &&
      typeof d.ours === "number" && d.ours !== 0 && d.ours !== 124 && d.ours !== 137,
  },
  {
    id: "batch-arguments",
    class: "scripts",
    differences: "Broker options are bash arrays (values with spaces stay one word)",
    guide: "## Scripts",
    // Batch mode: Go's flags are pasted into the sh -c text, ours are passed as its arguments;
    // the flux batch they run (recorded after it) is the same.
    matches: (d) => {
      if (d.kind !== "behaviour" || !/^containers\.[^.]+\.flux$/.test(d.path)) return false;
      const [go, ours] = [d.go, d.ours] as (string[][] | undefined)[];
      if (!go || !ours || go.length !== ours.length) return false;
      return go.every((g, i) => {
        const o = ours[i];
        if (JSON.stringify(g) === JSON.stringify(o)) return true;
        const gs = g.indexOf("sh");
        const os = o.indexOf("sh");
        return g[0] === "start" && gs > 0 && gs === os &&
          JSON.stringify(g.slice(0, gs)) === JSON.stringify(o.slice(0, os)) &&
          g[gs + 1] === "-c" &&
          /^flux batch .* --flags waitable \.\/flux-job\.batch/.test(g[gs + 2]) &&
          o[os + 2] ===
            'flux batch "$@" --flags waitable ./flux-job.batch && flux job wait --all' &&
          o[os + 3] === "flux-batch" &&
          g[gs + 2].replace(/\s+/g, " ") ===
            `flux batch ${
              o.slice(os + 4).join(" ")
            } --flags waitable ./flux-job.batch && flux job wait --all`;
      });
    },
  },
  {
    id: "flux-rc-extra",
    class: "scripts",
    differences: "`FLUX_RC_EXTRA` names `<view>/etc/flux`",
    guide: "## Scripts",
    matches: (d) =>
      d.kind === "behaviour" && /\.brokerEnvironment$/.test(d.path) &&
      JSON.stringify(d.go) ===
        JSON.stringify((d.ours as string[] | undefined)?.map((v) => `${v}/rc1.d`)),
  },
  {
    id: "flux-connect",
    class: "scripts",
    differences: "`flux-connect.sh` sources the view's environment",
    guide: "## Scripts",
    matches: (d) =>
      d.kind === "behaviour" && /flux-connect\.sh \(run\)$/.test(d.path) &&
      d.go === JSON.stringify([["proxy", "bash"]]),
  },
  {
    id: "sidecar-socket",
    class: "scripts",
    differences: "sidecars really wait for the broker's socket",
    guide: "## Scripts",
    // Go's sidecars point at a socket under the view that no broker creates.
    matches: (d) =>
      d.kind === "behaviour" && /^containers\.[^.]+\.flux$/.test(d.path) &&
      JSON.stringify(d.go).includes("/view/run/flux/local") &&
      JSON.stringify(d.go).replaceAll("/view/run/flux/local", "/config/run/flux/local") ===
        JSON.stringify(d.ours),
  },
  {
    id: "pod-cores",
    class: "scripts",
    differences: "each broker advertises the Flux container's CPU request",
    guide: "## Scripts",
    // Only the resource set's calls differ; what else differs in the same calls must be allowed
    // by an entry of its own.
    matches: (d, ctx) => {
      if (d.kind !== "behaviour" || !/^containers\.[^.]+\.flux$/.test(d.path)) return false;
      const go = withGoResourceSet((d.ours ?? []) as string[][]);
      if (!go) return false;
      if (JSON.stringify(go) === JSON.stringify(d.go)) return true;
      const rest = { ...d, ours: go };
      return ALLOW_LIST.some((e) => e.id !== "pod-cores" && e.matches(rest, ctx));
    },
  },
  {
    id: "lead-broker-hosts",
    class: "scripts",
    differences: "lists that broker once in `hosts`",
    guide: "## Bursting",
    // Go's template for this case is short of an argument (its hosts read `%!s(MISSING)`).
    matches: (d, ctx) =>
      d.kind === "behaviour" && d.path.endsWith("/broker.toml") && hasLeadBroker(ctx) &&
      typeof d.go === "string" && d.go.includes("%!s("),
  },
];
