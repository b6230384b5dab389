/**
 * Every child a MiniCluster should have, computed from its (defaulted) spec and its sizing by the
 * builders of the rows of child_kinds.ts (each row's builder makes its kind's children, owned and
 * hashed, owned_children.ts). No IO: the reconciler compares the result with the cache and writes
 * what differs.
 */
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import { CHILD_KINDS, type DesiredChildren } from "./child_kinds.ts";
import { unknownContainerProblems } from "../children/pod/container_annotations.ts";
import { checkCurveCertificate, userCurveCert } from "../children/curve.ts";
import type { GivenCurveCert } from "../policy/curve_source.ts";
import { headlessServiceName } from "../children/names.ts";
import type { Sizing } from "../children/sizing.ts";

/** A builder cannot make a valid child from this spec: a spec problem, not an operator failure. */
export class BuildError extends Error {
  override name = "BuildError";
}

/** What the children are built beside, from the live cluster (none: as `render` shows them). */
export interface DesiredOptions {
  /** A CURVE certificate given by the user (default: the spec's inline one). */
  given?: GivenCurveCert;
  /** The running Job's subdomain, which its brokers depend on. */
  runningSubdomain?: string;
  /** Leave spec.gang out (the API server does not serve it). */
  unganged?: boolean;
  /** The Job carries `suspend: true` (children/job.ts JobOptions). */
  suspend?: boolean;
  /** The Job's Kueue queue label (children/queue.ts jobQueueLabel). */
  queue?: string | null;
}

/**
 * The desired children of `mc` at `sizing`, with the user's CURVE certificate `given` (by default
 * the inline one), what the brokers depend on in `runningSubdomain` (the subdomain of the running
 * Job's pods, when there is a Job), the Job without its gang when `unganged` (the API server does
 * not serve it), the Job's suspension and queue label as the reconciler decided them. Throws
 * BuildError when the spec cannot be built (the builders' own errors are wrapped, so any builder
 * exception becomes a spec condition).
 */
export async function desiredChildren(
  mc: DefaultedMiniCluster,
  sizing: Sizing,
  opts: DesiredOptions = {},
): Promise<DesiredChildren> {
  const brokers = inSubdomain(mc, opts.runningSubdomain);
  const given = opts.given ?? inlineCurveCert(mc);
  const built: Record<string, unknown> = {};
  try {
    if (given) {
      const problems = await checkCurveCertificate(given.text);
      if (problems.length > 0) throw new BuildError(`${given.field}: ${problems.join("; ")}`);
    }
    const job = { unganged: opts.unganged, suspend: opts.suspend, queue: opts.queue };
    for (const { builder } of CHILD_KINDS) {
      const children = builder?.build({ mc, brokers, sizing, given, job });
      if (builder && children !== undefined) built[builder.field] = children;
    }
  } catch (e) {
    if (e instanceof BuildError) throw e;
    throw new BuildError(e instanceof Error ? e.message : String(e));
  }
  const desired = built as DesiredChildren;
  const stray = unknownContainerProblems(mc.spec.pod.annotations, desired.job, desired.servicesPod);
  if (stray.length > 0) throw new BuildError(stray.join("; "));
  return desired;
}

/**
 * `opts` without what makes no child differ, so that equal builds have equal options
 * (desired_memo.ts): a running subdomain that is the spec's own.
 */
export function effectiveOptions(mc: DefaultedMiniCluster, opts: DesiredOptions): DesiredOptions {
  if (opts.runningSubdomain !== headlessServiceName(mc)) return opts;
  const { runningSubdomain: _, ...rest } = opts;
  return rest;
}

/** `flux.curveCert` as a given certificate. */
function inlineCurveCert(mc: DefaultedMiniCluster): GivenCurveCert | undefined {
  const text = userCurveCert(mc);
  return text ? { text, field: "spec.flux.curveCert" } : undefined;
}

/**
 * `mc` as the brokers of its running Job see it: their pods stay in the Job's subdomain (a Job's
 * pod template cannot change), so the headless Service, the domain in broker.toml and the services
 * pod keep that name until the Job is created again; the Job itself is built from the spec, and
 * the difference is reported as a field the running Job cannot take.
 */
function inSubdomain(mc: DefaultedMiniCluster, subdomain?: string): DefaultedMiniCluster {
  if (!subdomain || subdomain === headlessServiceName(mc)) return mc;
  return { ...mc, spec: { ...mc.spec, network: { ...mc.spec.network, headlessName: subdomain } } };
}
