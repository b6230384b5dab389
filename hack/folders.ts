/**
 * The folders of the operator's code, what each holds and which folders its modules may import:
 * the layout's one declaration. `hack/module_rules.ts` (in `deno task check`) fails on an import
 * the table does not allow, or on a folder under `runtime/`, `api/` or `controllers/minicluster/`
 * without a row; `hack/layout-docs.ts` writes the table into docs/architecture.md.
 *
 * A module's folder is the folder it is in (not an ancestor). An entry of `imports` is a folder
 * (its own files, not its subfolders) or, for a single exception, one file. Imports inside a folder
 * are always allowed.
 */

/** One folder: what lives there and what it may import. */
export interface Folder {
  what: string;
  imports: readonly string[];
}

/** The folders whose every module is held to the table; a folder under them needs a row. */
export const RULED_ROOTS = ["runtime", "api", "controllers/minicluster"] as const;

const RUNTIME_LOWER = [
  "runtime/core",
  "runtime/cache",
  "runtime/config",
  "runtime/pacing",
  "runtime/client/wire",
  "runtime/client/transport",
  "runtime/client",
  "runtime/watch",
  "runtime/controller",
  "runtime/metrics",
  "runtime/aggregated",
];

/** Folder → its row, runtime layered bottom-up, then the API, then the controller's folders. */
export const FOLDERS: Readonly<Record<string, Folder>> = {
  "runtime/core": { what: "time as a dependency and the structured log", imports: [] },
  "runtime/cache": { what: "the shared cache of one kind (store) and its transforms", imports: [] },
  "runtime/config": {
    what: "kubeconfig and in-cluster configuration, bearer tokens and exec credentials",
    imports: ["runtime/core"],
  },
  "runtime/pacing": {
    what: "the write admission layer and its contract, burst yield, slots, relist budget, backoff",
    imports: ["runtime/core", "runtime/cache"],
  },
  "runtime/client/wire": {
    what:
      "the API server's JSON read without parsing all of it: a list's items one at a time, managedFields cut from an object's text; JSON text for people",
    imports: [],
  },
  "runtime/client/transport": {
    what:
      "how requests travel: the choice of transport for a connection, the HTTP/1.1 client, fetch's connections for watches",
    imports: ["runtime/config"],
  },
  "runtime/client": {
    what:
      "the client contract and the client: REST requests, errors, resource types, watch lines, answers taken from their watch echo",
    imports: [
      "runtime/core",
      "runtime/config",
      "runtime/pacing",
      "runtime/client/wire",
      "runtime/client/transport",
    ],
  },
  "runtime/watch": {
    what: "the watcher, its state machine and pacing, read-your-own-writes",
    imports: ["runtime/core", "runtime/cache", "runtime/pacing", "runtime/client"],
  },
  "runtime/controller": {
    what: "controller, workqueue, finalizer, dependents, freshness fence",
    imports: ["runtime/core", "runtime/cache", "runtime/pacing", "runtime/client"],
  },
  "runtime/metrics": {
    what: "the Prometheus registry and the runtime's metrics",
    imports: [
      "runtime/core",
      "runtime/cache",
      "runtime/pacing",
      "runtime/watch",
      "runtime/controller",
    ],
  },
  "runtime/aggregated": {
    what:
      "an aggregated API's parts: the front proxy's trust, the serving certificate, authorization by SubjectAccessReview, the HTTPS server",
    imports: ["runtime/core", "runtime/client"],
  },
  "runtime": {
    what: "the process: manager, flags and options, leader election, the HTTP endpoint",
    imports: RUNTIME_LOWER,
  },
  "api": {
    what: "the MiniCluster's types (generated), defaulting, validation, its resource",
    imports: ["runtime/client"],
  },
  "controllers/minicluster/children": {
    what: "one pure builder per child, its names and owner",
    imports: [
      "api",
      "controllers/minicluster/children/pod",
      "controllers/minicluster/children/scripts",
      "controllers/minicluster/children/scripts/parts",
    ],
  },
  "controllers/minicluster/children/pod": {
    what: "the pod spec's parts: pod, containers, volumes, annotations",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/children/scripts/parts",
    ],
  },
  "controllers/minicluster/children/scripts": {
    what: "the scripts the pods run, as templates, and broker.toml",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/children/scripts/parts",
      "runtime/client/wire/json_text.ts",
    ],
  },
  "controllers/minicluster/children/scripts/parts": {
    what:
      "what the scripts are written from: their input and settings, fixed paths, shell quoting, the command's words, the cores' lines",
    imports: ["api", "controllers/minicluster/children", "controllers/minicluster/kinds/diff.ts"],
  },
  "controllers/minicluster/kinds": {
    what:
      "the table of child kinds (one row per kind), stores, desired children and their memo, matchers and drift policies, the ClusterRole's rules",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/children/pod",
      "controllers/minicluster/gang",
      "controllers/minicluster/lifecycle",
      "controllers/minicluster/policy",
      "controllers/minicluster/status",
      "controllers/minicluster/workspace",
      "runtime/cache",
      "runtime/client",
      "runtime/controller",
      "runtime/metrics",
    ],
  },
  "controllers/minicluster/workspace": {
    what:
      "the workspace (what a MiniCluster remembers), its recovery, the sizes stage, the Flux view's mode and the nodes' runtimes it is chosen from",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/kinds",
      "controllers/minicluster/pipeline",
      "controllers/minicluster/status",
      "runtime/cache",
      "runtime/client",
      "runtime/controller",
    ],
  },
  "controllers/minicluster/status": {
    what:
      "the status as a function of what was observed, its writer and its metric, Events, messages",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/children/scripts",
      "controllers/minicluster/fluxqueue",
      "controllers/minicluster/gang",
      "controllers/minicluster/kinds",
      "controllers/minicluster/lifecycle",
      "controllers/minicluster/timing.ts",
      "runtime/client",
      "runtime/controller",
      "runtime/metrics",
    ],
  },
  "controllers/minicluster/fluxqueue": {
    what:
      "Flux's queue observed: the lead pod to read, the poller beside the reconciler, the report's parsing, the condition and metrics",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/children/scripts",
      "controllers/minicluster/kinds",
      "runtime/core",
      "runtime/cache",
      "runtime/pacing",
      "runtime/metrics",
      "runtime/aggregated/server.ts",
    ],
  },
  "controllers/minicluster/lifecycle": {
    what:
      "the Job's lifecycle, queueing (Kueue's Workload, the queue stage), held suspensions, finished, cleanup",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/kinds",
      "controllers/minicluster/pipeline",
      "controllers/minicluster/status",
      "runtime/core",
      "runtime/cache",
      "runtime/client",
      "runtime/controller",
    ],
  },
  "controllers/minicluster/gang": {
    what: "gang scheduling: the PodGroup, whether it is served, the GangScheduling condition",
    imports: [
      "controllers/minicluster/children",
      "controllers/minicluster/lifecycle",
      "runtime/cache",
      "runtime/client",
    ],
  },
  "controllers/minicluster/policy": {
    what: "--pod-security and its stage, the CURVE certificate (source, builder, integrity)",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/children/pod",
      "controllers/minicluster/children/scripts/parts",
      "controllers/minicluster/kinds",
      "controllers/minicluster/pipeline",
      "controllers/minicluster/workspace",
      "runtime/client",
      "runtime/controller",
    ],
  },
  "controllers/minicluster/pipeline": {
    what:
      "the reconcile as a list of stages, the loop and its metrics, the stages of no one domain",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/gang",
      "controllers/minicluster/kinds",
      "controllers/minicluster/lifecycle",
      "controllers/minicluster/policy",
      "controllers/minicluster/status",
      "controllers/minicluster/workspace",
      "runtime/core",
      "runtime/client",
      "runtime/controller",
      "runtime/metrics",
    ],
  },
  "controllers/minicluster/render": {
    what: "`render`: the children without a cluster, and its command",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/kinds",
      "controllers/minicluster/workspace",
    ],
  },
  "controllers/minicluster": {
    what: "the wiring: controller, reconciler, the operator's flags, timing",
    imports: [
      "api",
      "controllers/minicluster/children",
      "controllers/minicluster/fluxqueue",
      "controllers/minicluster/gang",
      "controllers/minicluster/kinds",
      "controllers/minicluster/lifecycle",
      "controllers/minicluster/pipeline",
      "controllers/minicluster/policy",
      "controllers/minicluster/status",
      "controllers/minicluster/workspace",
      "runtime",
      ...RUNTIME_LOWER,
    ],
  },
};
