/**
 * One side of the differential run: install an operator's CRD on the suite's private control
 * plane, create every manifest in a namespace of its own, start the operator as a local process,
 * wait until its children stop changing, and take a snapshot of everything in those namespaces.
 *
 * The two operators never run at the same time, and both CRDs have the same name: each side applies
 * its CRD with the same field manager, so the second apply replaces the first one's schema instead
 * of merging with it. Objects created under the first CRD stay stored; the second operator is
 * confined to its own namespaces (ours by `--namespaces`; the Go operator cannot be confined, so it
 * runs first, when only its namespaces exist).
 */
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { KubeClient } from "../../runtime/client/client.ts";
import { isAlreadyExists, isNotFound } from "../../runtime/client/errors.ts";
import {
  ConfigMaps,
  CustomResourceDefinitions,
  Jobs,
  Namespaces,
  PersistentVolumeClaims,
  Pods,
  type ResourceType,
  resourceType,
  Secrets,
  ServiceAccounts,
} from "../../runtime/client/resources.ts";
import { OperatorProcess } from "../../testing/operator_process.ts";
import { MiniClusters } from "../../api/resource.ts";
import { childWaves } from "../../controllers/minicluster/kinds/child_kinds.ts";
import { runGoOperator } from "../peer/go_operator.ts";
import { CRD_FILES } from "../crd_files.ts";
import type { Manifest } from "./manifests.ts";
import { REPO } from "./manifests.ts";

export type Side = "go" | "ours";

const FIELD_MANAGER = "minicluster-conformance";

/** What each side did with one manifest. */
export interface Outcome {
  /** The apiserver's answer to creating the MiniCluster under this side's CRD. */
  admitted: boolean;
  /** The refusal's message when not admitted. */
  refusal?: string;
  /** Every object in the manifest's namespace once the operator settled (MiniCluster excluded). */
  objects: KubeObject[];
  /** The MiniCluster as stored (defaulted by this side's CRD), when admitted. */
  stored?: KubeObject;
  /** Its status conditions once the operator settled ("type=status reason: message"). */
  conditions: string[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string }[];
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export interface SideResult {
  side: Side;
  /** Manifest id to outcome. */
  outcomes: Map<string, Outcome>;
  /** Seconds from starting the operator until its children stopped changing. */
  settleSeconds: number;
  /** The operator's last log lines (for a report when something looks wrong). */
  logTail: string;
}

export function namespaceFor(side: Side, index: number): string {
  return `cf-${side}-${index}`;
}

/** The cluster-scoped PriorityClass of examples/queueing.yaml (both sides use the one object). */
const PriorityClasses = resourceType(
  "scheduling.k8s.io",
  "v1",
  "priorityclasses",
  "PriorityClass",
  false,
);

/** Kinds a manifest file may hold beside its MiniCluster. */
const EXTRA_KINDS: Record<string, ResourceType> = {
  ConfigMap: ConfigMaps,
  Secret: Secrets,
  PersistentVolumeClaim: PersistentVolumeClaims,
  PriorityClass: PriorityClasses,
};

// Every kind the operator writes, from the table of child kinds. The workspace kind is ours only:
// on the Go side's control plane it does not exist (listed as none); nor, where the API server does
// not serve them, PodGroups.
const CHILD_KINDS: ResourceType[] = childWaves().flat().map((row) => row.rt);
/** Objects the cluster itself puts in every namespace. */
const CLUSTER_OWNED = new Set(["ConfigMap/kube-root-ca.crt"]);

export async function installCrd(client: KubeClient, crdPath: string): Promise<void> {
  const crd = parseYaml(await Deno.readTextFile(crdPath)) as KubeObject;
  await client.apply(CustomResourceDefinitions, crd, { fieldManager: FIELD_MANAGER, force: true });
  const name = crd.metadata!.name!;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const got = await client.get<KubeObject & { status?: { conditions?: Condition[] } }>(
      CustomResourceDefinitions,
      undefined,
      name,
    );
    const established = got.status?.conditions?.some((c) =>
      c.type === "Established" && c.status === "True"
    );
    // The stored version must be the one just applied (not the other side's, still cached).
    const names = got.status?.conditions?.some((c) =>
      c.type === "NamesAccepted" && c.status === "True"
    );
    if (established && names) break;
    if (Date.now() > deadline) throw new Error(`CRD ${name} not Established after 30 s`);
    await sleep(200);
  }
  // The apiserver serves a new schema a moment after the CRD says Established.
  await sleep(2000);
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function createNamespace(client: KubeClient, name: string): Promise<void> {
  await client.create(Namespaces, { metadata: { name } }).catch((e) => {
    if (!isAlreadyExists(e)) throw e;
  });
  // No controller manager on the suite's control plane: pods need the default ServiceAccount.
  await client.create(ServiceAccounts, { metadata: { name: "default", namespace: name } })
    .catch((e) => {
      if (!isAlreadyExists(e)) throw e;
    });
}

/** The objects of `rt` (none when the kind is not installed: the workspace on the Go side). */
async function listKind(
  client: KubeClient,
  rt: ResourceType,
  namespace?: string,
): Promise<KubeObject[]> {
  try {
    return (await client.list<KubeObject>(rt, namespace ? { namespace } : {})).items;
  } catch (e) {
    if (isNotFound(e)) return [];
    throw e;
  }
}

/** Snapshot of the children in `namespace` (not the MiniCluster itself). */
async function snapshot(client: KubeClient, namespace: string): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const rt of CHILD_KINDS) {
    for (const item of await listKind(client, rt, namespace)) {
      if (rt === Pods && item.metadata?.ownerReferences?.some((o) => o.kind === "Job")) continue;
      if (CLUSTER_OWNED.has(`${rt.kind}/${item.metadata?.name}`)) continue;
      out.push({
        ...item,
        apiVersion: rt.group ? `${rt.group}/${rt.version}` : rt.version,
        kind: rt.kind,
      });
    }
  }
  return out;
}

/**
 * A fingerprint of every child in the namespaces (unchanged means settled), and the namespaces
 * that have a Job (every operator creates one for a valid MiniCluster).
 */
async function fingerprint(
  client: KubeClient,
  prefix: string,
): Promise<{ print: string; withJob: Set<string> }> {
  const parts: string[] = [];
  const withJob = new Set<string>();
  for (const rt of CHILD_KINDS) {
    for (const item of await listKind(client, rt)) {
      const ns = item.metadata?.namespace ?? "";
      if (!ns.startsWith(prefix)) continue;
      parts.push(`${rt.kind}/${ns}/${item.metadata?.name}@${item.metadata?.resourceVersion}`);
      if (rt === Jobs) withJob.add(ns);
    }
  }
  return { print: parts.sort().join("\n"), withJob };
}

export interface RunOptions {
  kubeconfig: string;
  manifests: Manifest[];
  /** The side's CRD file(s). */
  crd: string | string[];
  /** Starts the operator; returns a stop function and its log. */
  start: (namespaces: string[]) => Promise<RunningOperator>;
  /** How long the children must stay unchanged to count as settled. */
  quietSeconds?: number;
  /** Delete this side's MiniClusters once the snapshot is taken. */
  removeAfterwards?: boolean;
  timeoutSeconds?: number;
  log: (message: string) => void;
}

export interface RunningOperator {
  stop(): Promise<void>;
  logTail(): string;
}

export async function runSide(side: Side, opts: RunOptions): Promise<SideResult> {
  const client = await KubeClient.fromKubeconfig(opts.kubeconfig);
  try {
    for (const crd of [opts.crd].flat()) await installCrd(client, crd);
    const outcomes = new Map<string, Outcome>();
    const namespaces: string[] = [];
    for (const [index, manifest] of opts.manifests.entries()) {
      const namespace = namespaceFor(side, index);
      const object = { ...manifest.object, metadata: { ...manifest.object.metadata, namespace } };
      if (manifest.admissionOnly) {
        // Validation only: nothing is stored, no namespace is needed beyond the request's.
        await createNamespace(client, namespace);
        const refusal = await client.create(MiniClusters, object, { dryRun: true }).then(
          () => undefined,
          (e) => errorMessage(e),
        );
        outcomes.set(manifest.id, {
          admitted: refusal === undefined,
          refusal,
          objects: [],
          conditions: [],
        });
        continue;
      }
      await createNamespace(client, namespace);
      namespaces.push(namespace);
      for (const extra of manifest.extra) {
        const rt = EXTRA_KINDS[extra.kind];
        if (!rt) throw new Error(`${manifest.path}: cannot create a ${extra.kind}`);
        if (!rt.namespaced) {
          await client.create(rt, extra).catch((e) => {
            if (!isAlreadyExists(e)) throw e;
          });
          continue;
        }
        await client.create(rt, { ...extra, metadata: { ...extra.metadata, namespace } });
      }
      const created = await client.create<KubeObject>(MiniClusters, object).then(
        (stored) => ({ stored }),
        (e) => ({ refusal: errorMessage(e) }),
      );
      outcomes.set(manifest.id, {
        admitted: "stored" in created,
        refusal: "refusal" in created ? created.refusal : undefined,
        stored: "stored" in created ? created.stored : undefined,
        objects: [],
        conditions: [],
      });
    }

    const t0 = performance.now();
    const operator = await opts.start(namespaces);
    let settleSeconds: number;
    try {
      settleSeconds = await settle(client, `cf-${side}-`, namespaces, opts, t0);
    } finally {
      await operator.stop();
    }
    for (const [index, manifest] of opts.manifests.entries()) {
      const outcome = outcomes.get(manifest.id)!;
      if (manifest.admissionOnly || !outcome.admitted) continue;
      outcome.objects = await snapshot(client, namespaceFor(side, index));
      const mc = await client.get<KubeObject & { status?: { conditions?: Condition[] } }>(
        MiniClusters,
        namespaceFor(side, index),
        manifest.object.metadata.name,
      );
      outcome.conditions = (mc.status?.conditions ?? []).map((c) =>
        `${c.type}=${c.status} ${c.reason ?? ""}: ${c.message ?? ""}`
      );
    }
    if (opts.removeAfterwards) {
      // MiniClusters without finalizers go at once; their children stay (no garbage collector on
      // this control plane), so the next operator, which watches every namespace, never sees them.
      for (const namespace of namespaces) {
        const list = await client.list<KubeObject>(MiniClusters, { namespace });
        for (const mc of list.items) {
          await client.delete(MiniClusters, namespace, mc.metadata!.name!);
        }
      }
    }
    return { side, outcomes, settleSeconds, logTail: operator.logTail() };
  } finally {
    client.close();
  }
}

/**
 * Waits until no child changed for `quietSeconds` and every namespace has its Job (or, for a
 * MiniCluster an operator refuses to build, `patienceSeconds` have passed); returns when the last
 * change was seen.
 */
async function settle(
  client: KubeClient,
  prefix: string,
  namespaces: string[],
  opts: RunOptions,
  t0: number,
): Promise<number> {
  const quietMs = (opts.quietSeconds ?? 6) * 1000;
  const patienceMs = 15_000;
  const deadline = t0 + (opts.timeoutSeconds ?? 180) * 1000;
  let last = "";
  let lastChange = performance.now();
  for (;;) {
    const now = performance.now();
    const { print, withJob } = await fingerprint(client, prefix);
    const complete = namespaces.every((ns) => withJob.has(ns)) || now - t0 > patienceMs;
    if (print !== last) {
      last = print;
      lastChange = now;
    } else if (complete && now - lastChange >= quietMs) {
      return (lastChange - t0) / 1000;
    }
    if (now > deadline) {
      opts.log(`children still changing after ${(now - t0) / 1000} s; comparing what exists`);
      return (lastChange - t0) / 1000;
    }
    await sleep(500);
  }
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The Go operator as a local process against the suite's cluster (hack/peer/go_operator.ts). */
export async function startGoOperator(
  binary: string,
  kubeconfig: string,
  logFile: string,
): Promise<RunningOperator> {
  const process = await runGoOperator({ binary, kubeconfig, logFile });
  return { stop: () => process.stop(), logTail: () => process.logTail() };
}

/**
 * This repository's operator (`deno run mod.ts` with the compiled binary's permissions), watching
 * every namespace: `--namespaces` with dozens of namespaces opens six watches per namespace on one
 * HTTP/2 connection, and past about a hundred streams its other requests wait behind them, so no
 * reconcile finishes (found by this suite with 37 namespaces; a limit of runtime/, which another
 * change is restructuring, so it is not fixed here).
 */
export async function startOurOperator(kubeconfig: string): Promise<RunningOperator> {
  // The Go operator copies the Flux view: ours copies too, whatever the nodes could mount.
  const operator = await OperatorProcess.start({ kubeconfig, args: ["--flux-view-mount=copy"] });
  await operator.ready();
  return {
    async stop() {
      await operator.stop();
    },
    logTail: () => operator.logTail(),
  };
}

/**
 * Our side installs the CRDs alone, not deploy/install.yaml: without its admission policy against
 * the inline CURVE certificate, the fixtures that carry the Go operator's `flux.curveCert` are
 * compared as the Go operator runs them (our operator's --inline-curve-cert defaults to allow).
 * The policy's refusal: tests/integration/inline_curve_cert_policy_test.ts.
 */
export const OUR_CRD = CRD_FILES.map((file) => join(REPO, file));
