/**
 * The build stage of the reconcile (pipeline.ts): the CURVE certificate's source (a referenced
 * Secret is read), how the Job is queued (queue_stage.ts), and the desired children (desired.ts),
 * beside a running Job in its subdomain; a gang the API server does not serve is built again
 * unganged (gang_support.ts, gang_condition.ts). Only reads and a dry run.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import { jobPodGroup } from "../children/gang.ts";
import { curveSource, type InlineCurveCertPolicy } from "../policy/curve_source.ts";
import type { DesiredChildren, MiniClusterStores } from "../kinds/child_kinds.ts";
import { BuildError, desiredChildren, type DesiredOptions } from "../kinds/desired.ts";
import type { GangReport } from "../gang/gang_condition.ts";
import type { GangSupportProbe } from "../gang/gang_support.ts";
import { type Queueing, readQueueing } from "../lifecycle/queue_stage.ts";
import { reportedSizes } from "../workspace/sizes_stage.ts";
import { proceed, type Stage, stop } from "./stage.ts";
import { ownJob } from "../kinds/stores.ts";
import type { DesiredMemo } from "../kinds/desired_memo.ts";
import type { Sizes } from "../workspace/workspace.ts";

/**
 * What the build adds: the built children, the running Job they were built beside, the gang as far
 * as known, and how the Job is queued.
 */
export interface Built {
  readonly desired: DesiredChildren;
  readonly running: Job | undefined;
  readonly gang: GangReport;
  readonly queueing: Queueing;
}

export interface BuildStageOptions {
  readonly client: ApiClient;
  readonly stores: MiniClusterStores;
  readonly gangSupport: GangSupportProbe;
  /** Whether `flux.curveCert` is accepted (curve_source.ts). */
  readonly inlineCurveCert: InlineCurveCertPolicy;
  /** The builds of starting MiniClusters, reused while their inputs stay the same. */
  readonly memo: DesiredMemo;
}

export function buildStage(
  opts: BuildStageOptions,
): (
  record: { readonly spec: DefaultedMiniCluster; readonly sizes: Sizes },
) => Promise<Stage<Built>> {
  const { client, stores, gangSupport, inlineCurveCert, memo } = opts;
  const built = (spec: DefaultedMiniCluster, sizes: Sizes, desiredOpts: DesiredOptions) =>
    buildOrStop(memo, spec, sizes, desiredOpts);
  return async ({ spec, sizes }) => {
    const curve = await curveSource(client, spec, inlineCurveCert);
    if ("invalid" in curve) return stop({ ...reportedSizes(sizes), invalid: curve.invalid });
    if ("problem" in curve) {
      return stop({ ...reportedSizes(sizes), unappliable: curve.problem }, curve.recheckMs);
    }
    const given = "text" in curve ? curve : undefined;
    // What the running brokers depend on follows their Job's subdomain, not the spec's.
    const running = ownJob(stores, spec);
    const runningSubdomain = running?.spec?.template?.spec?.subdomain;
    const queueing = await readQueueing(client, spec, running);
    const suspend = spec.spec.suspend === true && !queueing.read?.workload;
    const desiredOpts = { given, runningSubdomain, suspend, queue: queueing.label };
    const first = await built(spec, sizes, desiredOpts);
    if (first.stop) return first;
    const asked = spec.spec.gang !== undefined;
    const ganged = (desired: DesiredChildren, gang: GangReport) =>
      proceed({ desired, running, gang, queueing });
    if (!asked || jobPodGroup(running) !== undefined) return ganged(first.value, { asked });
    const support = await gangSupport.check(first.value.job);
    if (support.served) return ganged(first.value, { asked });
    const unganged = await built(spec, sizes, { ...desiredOpts, unganged: true });
    if (unganged.stop) return unganged;
    return ganged(unganged.value, { asked, unavailable: support.why });
  };
}

/** The desired children at `sizes`, or why the builders cannot make them (`BuildFailed`). */
async function buildOrStop(
  memo: DesiredMemo,
  spec: DefaultedMiniCluster,
  sizes: Sizes,
  opts: DesiredOptions,
): Promise<Stage<DesiredChildren>> {
  try {
    return proceed(await memo.desired(spec, sizes, opts, () => desiredChildren(spec, sizes, opts)));
  } catch (e) {
    if (!(e instanceof BuildError)) throw e;
    return stop({
      ...reportedSizes(sizes),
      invalid: { reason: "BuildFailed", message: e.message },
    });
  }
}
