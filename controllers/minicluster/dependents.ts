/**
 * Every child of a MiniCluster as a dependent resource (runtime/dependents.ts): which store it is
 * observed in, how it is compared (stores.ts), and what happens when it drifts:
 *
 * | child                               | when it differs                                          |
 * | ----------------------------------- | -------------------------------------------------------- |
 * | workspace (MiniClusterWorkspace)    | never updated (create-once, see workspace.ts)            |
 * | entrypoint ConfigMap                | applied                                                  |
 * | CURVE Secret given in the spec      | applied                                                  |
 * | CURVE Secret generated              | never updated (create-once: brokers that started with a  |
 * |                                     | certificate cannot talk to brokers with a new one)       |
 * | headless / per-container Services   | applied; re-created when headless⇄ClusterIP             |
 * | services Pod                        | labels patched; re-created only when the desired spec    |
 * |                                     | changed, with backoff (services_pod_drift.ts)            |
 * | Job                                 | what a running Job accepts is patched, the rest reported |
 *
 * The Job comes in a second wave, after the objects its pods mount, and only once they exist.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { DefaultedMiniCluster, MiniCluster } from "../../api/mod.ts";
import type { MiniClusterWorkspace } from "../../api/workspace.ts";
import {
  applyWhenDifferent,
  type Dependent,
  dependent,
  type DependentPlan,
  type DependentsOutcome,
  type DriftPolicy,
  type Problem,
} from "../../runtime/dependents.ts";
import type { ApiClient } from "../../runtime/api_client.ts";
import { isInvalid, isNotFound } from "../../runtime/errors.ts";
import { Jobs, Secrets } from "../../runtime/resources.ts";
import type { KubeObject, Store } from "../../runtime/store.ts";
import { buildCurveSecret, curveMetadataFor, generateCurveCertificate } from "./children/curve.ts";
import { jobPodGroup } from "./children/gang.ts";
import { curveSecretName, FIELD_MANAGER } from "./children/names.ts";
import { withCurveDigest } from "./curve_integrity.ts";
import type { MiniClusterInput } from "./children/scripts/input.ts";
import { DESIRED_HASH_ANNOTATION, differingPaths } from "./diff.ts";
import { type DesiredChildren, owned, TEMPLATE_HASH_ANNOTATION } from "./desired.ts";
import type { EventRecorder } from "./events.ts";
import type { HeldSuspensions } from "./held_suspensions.ts";
import { suspendedOnlyBy } from "./lifecycle.ts";
import { type RecreateBudget, servicesPodDrift } from "./services_pod_drift.ts";
import { type MiniClusterStores, ownJob, watched, type WatchedKind } from "./stores.ts";
import { kueueQueueOf } from "./children/queue.ts";
import { confirms, type Sizes, workspaceDependent } from "./workspace.ts";

/** How the CURVE certificate is made and wrapped into its Secret (tests may count calls). */
export interface CurveBuilders {
  generate(mc: MiniClusterInput): string | Promise<string>;
  build(mc: MiniClusterInput, certificate: string): Secret;
}

/** A generated certificate names the lead broker's host, as the Go operator's does. */
export const defaultCurve: CurveBuilders = {
  generate: async (mc) => (await generateCurveCertificate(curveMetadataFor(mc))).text,
  build: (mc, text) => buildCurveSecret(mc, text),
};

/**
 * Job spec fields a running Job accepts; everything else in the template is immutable. `suspend`
 * is in desired Jobs only when the user suspends (true); resuming is decided apart (jobDrift).
 */
const MUTABLE_JOB_FIELDS = [
  "parallelism",
  "completions",
  "backoffLimit",
  "activeDeadlineSeconds",
  "suspend",
];

/** The kinds whose children the MiniCluster owns and prunes when the spec drops them. */
const PRUNED_KINDS: readonly (keyof MiniClusterStores)[] = [
  "configMaps",
  "services",
  "pods",
  "secrets",
];

/** The plan of a MiniCluster's dependents, and its workspace among them (workspace.ts). */
export interface MiniClusterPlan extends DependentPlan {
  workspace: Dependent<MiniClusterWorkspace>;
}

/**
 * The dependents of `mc` built for `sizes`, in the waves they are written in, and where pruning
 * looks. Sizes no workspace holds yet must be confirmed by the workspace before the Job (and before
 * pruning, which deletes an older version's workspace ConfigMap once it is migrated).
 */
export function miniClusterDependents(
  mc: DefaultedMiniCluster,
  desired: DesiredChildren,
  sizes: Sizes,
  stores: MiniClusterStores,
  io: { curve: CurveBuilders; recreates: RecreateBudget } & JobIo,
): MiniClusterPlan {
  const child = <C extends KubeObject>(
    key: keyof MiniClusterStores,
    obj: C,
    drift?: DriftPolicy<C>,
  ) => {
    const kind = watched(key);
    return dependent(
      kind.rt,
      stores[key] as Store<C>,
      obj,
      drift ?? applyWhenDifferent(matcher(kind)),
    );
  };
  const generatedCurveSecret: Dependent<Secret> = {
    resource: Secrets,
    store: stores.secrets,
    namespace: mc.metadata?.namespace,
    name: curveSecretName(mc),
    desired: async () =>
      owned(mc, withCurveDigest(io.curve.build(mc, await io.curve.generate(mc)))),
    drift: "createOnce",
    needed: true,
  };
  const services = watched("services");
  // The sizes' values, never the spec's: this creates the workspace when no workspace held the
  // sizes (workspace.ts), or when it went since they were read.
  const workspace = workspaceDependent(
    mc,
    stores.workspaces,
    sizes.unconfirmed?.workspace ?? { maxSize: sizes.maximumSize, size: sizes.effectiveSize },
  );
  const waves = [
    [
      workspace,
      needed(child("configMaps", desired.configMap)),
      desired.curveSecret ? needed(child("secrets", desired.curveSecret)) : generatedCurveSecret,
      ...desired.services.map((s) => child("services", s, serviceDrift(matcher(services)))),
      ...(desired.servicesPod
        ? [child("pods", desired.servicesPod, servicesPodDrift(mc, io.recorder, io.recreates))]
        : []),
    ],
    // A MiniCluster queued by Kueue and suspended from the start gets its Job when resumed: Kueue
    // would admit a new Job at once, before its Workload could be deactivated (queue_workload.ts).
    // The wave stays, empty, so that the workspace is still confirmed before pruning.
    kueueQueueOf(mc) && mc.spec.suspend === true && !ownJob(stores, mc)
      ? []
      : [child("jobs", desired.job, jobDrift(mc, io))],
  ] as Dependent[][];
  const pruned = PRUNED_KINDS.map((key) => ({
    resource: watched(key).rt,
    store: stores[key] as Store<KubeObject>,
  }));
  const proceed = (outcome: DependentsOutcome) =>
    confirms(outcome.results.get(workspace as Dependent)?.object as MiniClusterWorkspace, sizes);
  return { waves, pruned, workspace, ...(sizes.unconfirmed ? { proceed } : {}) };
}

const matcher = (kind: WatchedKind) => kind.matches!;

/** The Job's pods mount it: without it they could not start (or would read someone else's). */
const needed = <C extends KubeObject>(d: Dependent<C>): Dependent<C> => ({ ...d, needed: true });

const isHeadless = (s: Service) => s.spec?.clusterIP === "None";

/**
 * A Service is applied, except across headless⇄ClusterIP (flux.minimalService switched): clusterIP
 * is immutable, and an apply that leaves it out succeeds while the server keeps "None", so the
 * Service would silently stay headless. It is re-created instead (also when the API refuses an
 * apply as Invalid for that reason).
 */
function serviceDrift(matches: (o: KubeObject, d: KubeObject) => boolean): DriftPolicy<Service> {
  return {
    matches,
    async update(observed, desired, writes) {
      if (isHeadless(observed) !== isHeadless(desired)) return await writes.recreate(observed);
      try {
        return await writes.apply(desired);
      } catch (e) {
        if (isInvalid(e)) return await writes.recreate(observed);
        throw e;
      }
    },
  };
}

/**
 * The Job: created whole; later only what a running Job accepts. A changed pod template (or
 * completion mode) is reported with the fields that differ and left alone — recreating the Job
 * would kill the running cluster — while size, limits and suspension still follow the spec.
 *
 * A suspended Job the spec no longer suspends is resumed when the operator alone suspended it,
 * whichever of its writes did (the apply, or a patch while the template differed), as read from
 * the live Job's managedFields (the cache keeps none); one a queue controller holds is left alone.
 */
function jobDrift(mc: MiniCluster, io: JobIo): DriftPolicy<Job> {
  const { recorder } = io;
  const scaled = async (before: Job, after?: Job) => {
    const from = before.spec?.parallelism;
    const to = after?.spec?.parallelism;
    if (from === undefined || to === undefined || from === to) return;
    await recorder.emit(mc, {
      type: "Normal",
      reason: "Scaled",
      message: `scaled the Job from ${from} to ${to} pods`,
    });
  };
  const upToDate = matcher(watched("jobs")) as (o: Job, d: Job) => boolean;
  // Suspended while the spec does not suspend, and not known to be held by someone else.
  const mayResume = (observed: Job, desired: Job) =>
    observed.spec?.suspend === true && desired.spec?.suspend !== true && !io.held.holds(observed);
  return {
    matches: (observed, desired) => upToDate(observed, desired) && !mayResume(observed, desired),
    async update(observed, desired, writes) {
      const resume = mayResume(observed, desired) && await suspendedByUs(io, observed);
      const hash = (j: Job) => j.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION];
      if (hash(observed) === hash(desired)) {
        if (!resume && upToDate(observed, desired)) return { object: observed };
        // An apply that leaves spec.suspend out resumes only a Job no other write of ours holds.
        let result = await writes.apply(desired);
        if (resume && result.object?.spec?.suspend === true) {
          result = await writes.patch(result.object, { spec: { suspend: false } });
        }
        await scaled(observed, result.object);
        return result;
      }
      const problem = immutableFields(observed, desired);
      const patch = mutableJobPatch(observed, desired, resume);
      if (!patch) return { object: observed, problem };
      const patched = await writes.patch(observed, patch);
      await scaled(observed, patched.object);
      return { ...patched, problem };
    },
  };
}

/** What the Job's drift policy needs besides its writes. */
interface JobIo {
  recorder: EventRecorder;
  /** Reads the live Job (with its managedFields). */
  client: ApiClient;
  /** Jobs a live read found held by someone else, not read again until they change. */
  held: HeldSuspensions;
}

/** The live Job is suspended by the operator alone (not by a queue controller). */
async function suspendedByUs(io: JobIo, observed: Job): Promise<boolean> {
  const { namespace, name } = observed.metadata ?? {};
  let live: Job;
  try {
    live = await io.client.get<Job>(Jobs, namespace, name!);
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
  const ours = suspendedOnlyBy(live, FIELD_MANAGER);
  io.held.note(live, live.spec?.suspend === true && !ours);
  return ours;
}

function immutableFields(observed: Job, desired: Job): Problem {
  const paths = differingPaths(observed, desired).filter((p) =>
    !p.startsWith("metadata.annotations")
  );
  const immutable = paths.filter((p) =>
    /^spec\.(template|completionMode|successPolicy|podFailurePolicy)/.test(p)
  );
  // spec.gang turned off: the subset comparison cannot see a field the desired template lacks.
  if (jobPodGroup(observed) !== undefined && jobPodGroup(desired) === undefined) {
    immutable.push("spec.template.spec.schedulingGroup");
  }
  const fields = immutable.length > 0 ? immutable.join(", ") : "spec.template (fields removed)";
  const subdomain = observed.spec?.template?.spec?.subdomain;
  const kept = immutable.includes("spec.template.spec.subdomain")
    ? `; until then its brokers keep the headless Service ${subdomain} and its domain`
    : "";
  return {
    reason: "JobFieldsImmutable",
    message: `the running Job ${desired.metadata?.name} cannot take changes to ${fields}; ` +
      `they apply when the MiniCluster is created again${kept}`,
  };
}

/**
 * The merge patch of the fields a running Job takes, or undefined when they already match; with
 * `resume`, also `suspend: false`.
 */
function mutableJobPatch(
  observed: Job,
  desired: Job,
  resume: boolean,
): Record<string, unknown> | undefined {
  const spec: Record<string, unknown> = {};
  for (const field of MUTABLE_JOB_FIELDS) {
    const want = (desired.spec as Record<string, unknown> | undefined)?.[field];
    const have = (observed.spec as Record<string, unknown> | undefined)?.[field];
    if (want !== undefined && want !== have) spec[field] = want;
  }
  if (resume) spec.suspend = false;
  const labels = desired.metadata?.labels ?? {};
  const labelsDiffer = Object.entries(labels).some(([k, v]) =>
    observed.metadata?.labels?.[k] !== v
  );
  // The user's spec.jobAnnotations; the hash annotations stay as they are (the template differs).
  const annotations = Object.fromEntries(
    Object.entries(desired.metadata?.annotations ?? {}).filter(([k, v]) =>
      k !== TEMPLATE_HASH_ANNOTATION && k !== DESIRED_HASH_ANNOTATION &&
      observed.metadata?.annotations?.[k] !== v
    ),
  );
  const annotationsDiffer = Object.keys(annotations).length > 0;
  if (Object.keys(spec).length === 0 && !labelsDiffer && !annotationsDiffer) return undefined;
  const metadata = {
    ...(labelsDiffer ? { labels } : {}),
    ...(annotationsDiffer ? { annotations } : {}),
  };
  return {
    ...(labelsDiffer || annotationsDiffer ? { metadata } : {}),
    ...(Object.keys(spec).length > 0 ? { spec } : {}),
  };
}
