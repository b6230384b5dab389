/**
 * The Job's drift policy: created whole; later only what a running Job accepts. A changed pod
 * template (or completion mode) is reported with the fields that differ and left alone —
 * recreating the Job would kill the running cluster — while size, limits and suspension still
 * follow the spec.
 *
 * A suspended Job the spec no longer suspends is resumed when the operator alone suspended it,
 * whichever of its writes did (the apply, or a patch while the template differed), as read from
 * the live Job's managedFields (the cache keeps none); one a queue controller holds is left alone.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { MiniCluster } from "../../../api/mod.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import type { DriftPolicy, Problem } from "../../../runtime/controller/dependents.ts";
import { getOrUndefined } from "../../../runtime/client/get_or_undefined.ts";
import { Jobs } from "../../../runtime/client/resources.ts";
import { jobPodGroup } from "../children/gang.ts";
import { FIELD_MANAGER } from "../children/names.ts";
import { DESIRED_HASH_ANNOTATION, differingPaths } from "./diff.ts";
import { TEMPLATE_HASH_ANNOTATION } from "./owned_children.ts";
import type { EventRecorder } from "../status/events.ts";
import type { HeldSuspensions } from "../lifecycle/held_suspensions.ts";
import { suspendedOnlyBy } from "../lifecycle/lifecycle.ts";
import type { Matcher } from "./stores.ts";

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

/** The drift policy of the Job of `mc`; `matches` is its kind's matcher (child_kinds.ts). */
export function jobDrift(mc: MiniCluster, io: JobIo, matches: Matcher): DriftPolicy<Job> {
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
  const upToDate = matches as (o: Job, d: Job) => boolean;
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
export interface JobIo {
  recorder: EventRecorder;
  /** Reads the live Job (with its managedFields). */
  client: ApiClient;
  /** Jobs a live read found held by someone else, not read again until they change. */
  held: HeldSuspensions;
}

/** The live Job is suspended by the operator alone (not by a queue controller). */
async function suspendedByUs(io: JobIo, observed: Job): Promise<boolean> {
  const { namespace, name } = observed.metadata ?? {};
  const live = await getOrUndefined<Job>(io.client, Jobs, namespace, name!);
  if (!live) return false;
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
