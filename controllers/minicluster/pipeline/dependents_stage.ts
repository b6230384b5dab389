/**
 * The dependents stage of the reconcile (pipeline.ts): every child in its wave, then pruning
 * (dependents.ts, on runtime/controller/dependents.ts). A transient failure stops with the error for the
 * backoff, reported only when it keeps failing; a workspace that does not confirm the sizes stops
 * before the Job. What the children became is the status report the later stages start from.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { DefaultedMiniCluster, MiniCluster } from "../../../api/mod.ts";
import type { MiniClusterWorkspace } from "../../../api/workspace.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import type { ReconcileContext } from "../../../runtime/controller/controller.ts";
import {
  created,
  type Dependent,
  type DependentResources,
  type DependentsOutcome,
  type Problem,
} from "../../../runtime/controller/dependents.ts";
import type { FreshnessFence } from "../../../runtime/controller/freshness_fence.ts";
import { Jobs } from "../../../runtime/client/resources.ts";
import { jobPodGroup, type PodGroup } from "../children/gang.ts";
import { curveSecretName, podGroupName } from "../children/names.ts";
import { curveProblems } from "../policy/curve_integrity.ts";
import { type CurveBuilders, miniClusterDependents } from "../kinds/dependents.ts";
import type { EventRecorder } from "../status/events.ts";
import type { GangReport } from "../gang/gang_condition.ts";
import type { HeldSuspensions } from "../lifecycle/held_suspensions.ts";
import { joinedMessages } from "../status/messages.ts";
import { PodGroups, podGroupState } from "../gang/pod_group.ts";
import type { Queueing } from "../lifecycle/queue_stage.ts";
import type { RecreateBudget } from "../kinds/services_pod_drift.ts";
import { reportedSizes } from "../workspace/sizes_stage.ts";
import { proceed, type Stage, stop } from "./stage.ts";
import type { StatusReport } from "../status/status_writer.ts";
import type { DesiredChildren, MiniClusterStores } from "../kinds/child_kinds.ts";
import { ownJob } from "../kinds/stores.ts";
import { type Sizes, unusable } from "../workspace/workspace.ts";

export interface DependentsStageOptions {
  readonly client: ApiClient;
  readonly stores: MiniClusterStores;
  readonly resources: DependentResources;
  readonly recorder: EventRecorder;
  readonly curve: CurveBuilders;
  readonly recreates: RecreateBudget;
  readonly held: HeldSuspensions;
}

/** What the dependents stage reads of the record. */
interface DependentsRecord {
  readonly mc: MiniCluster;
  readonly spec: DefaultedMiniCluster;
  readonly sizes: Sizes;
  readonly desired: DesiredChildren;
  readonly running: Job | undefined;
  readonly gang: GangReport;
  readonly queueing: Queueing;
  readonly fence: FreshnessFence;
  readonly ctx: ReconcileContext;
}

/** What the dependents leave: the status report so far and the soonest requeue they asked for. */
export interface Applied {
  readonly report: StatusReport;
  readonly requeueAfterMs: number | undefined;
}

/** Adds the report of what the children became (Applied). */
export function dependentsStage(
  opts: DependentsStageOptions,
): (record: DependentsRecord) => Promise<Stage<Applied>> {
  const { client, stores, resources, recorder, curve, recreates, held } = opts;
  const io = { client, recorder, curve, recreates, held };
  return async (r) => {
    const { mc, spec, sizes, fence } = r;
    const plan = miniClusterDependents(spec, r.desired, sizes, stores, io);
    const outcome = await resources.reconcile(mc, plan, fence);
    if (outcome.retry !== undefined) {
      const report = failing(r.ctx)
        ? { ...reportedSizes(sizes), unappliable: summary(outcome.problems) }
        : undefined;
      return stop(report, undefined, { retry: outcome.retry });
    }
    const workspace = outcome.results.get(plan.workspace as Dependent);
    if (outcome.stopped) {
      const refused = workspace?.taken ?? workspace?.object;
      const why = refused ? unusable(spec, refused as MiniClusterWorkspace) : undefined;
      if (why) {
        return stop({ ...reportedSizes(sizes), unappliable: why.problem }, why.requeueAfterMs);
      }
      if (workspace?.problem) {
        return stop(
          { ...reportedSizes(sizes), unappliable: workspace.problem },
          workspace.requeueAfterMs,
        );
      }
      // The workspace holds other sizes than the unconfirmed ones: build again from it.
      return stop(undefined, 0);
    }
    if (workspace?.created && sizes.unconfirmed?.from === "entrypoint") {
      await recorder.emit(mc, {
        type: "Warning",
        reason: "WorkspaceRecovered",
        message: `the MiniClusterWorkspace ${plan.workspace.name} was missing; made again from ` +
          `the running brokers' hostlist (maxSize ${sizes.maximumSize}), not from the spec`,
      });
    }
    const problems = [
      ...outcome.problems,
      ...(r.queueing.change ? [r.queueing.change] : []),
      ...curveGone(stores, mc, r.desired),
    ];
    return proceed({
      report: {
        ...reportedSizes(sizes),
        unappliable: summary(problems),
        jobCreated: created(outcome, Jobs),
        gang: gangAfter(stores, spec, r.running, r.gang, outcome),
      },
      requeueAfterMs: outcome.requeueAfterMs,
    });
  };
}

/**
 * This reconcile retries one that failed: a write that keeps failing is reported now, with the
 * API's message (reconciler.ts: the report is written before the error is thrown for the backoff).
 * A single failure writes nothing, so one blip of the API server does not flap the conditions.
 */
function failing(ctx: ReconcileContext): boolean {
  return ctx.retries >= 1;
}

/**
 * The gang as the dependents left it: the PodGroup the pods name (or would name) as this
 * reconcile wrote it, else as the cache shows it (a ganged Job whose spec dropped the gang).
 */
function gangAfter(
  stores: MiniClusterStores,
  spec: DefaultedMiniCluster,
  running: Job | undefined,
  gang: GangReport,
  outcome: DependentsOutcome,
): GangReport {
  const name = jobPodGroup(running) ?? podGroupName(spec);
  const written = [...outcome.results].find(([d]) => d.resource === PodGroups)?.[1]
    .object as PodGroup | undefined;
  const group = written ?? stores.podGroups.get(spec.metadata?.namespace, name);
  const podGroup = podGroupState(group, spec.metadata?.uid);
  return { ...gang, ...(podGroup ? { podGroup } : {}) };
}

/** What happened to the generated CURVE certificate behind the operator's back. */
function curveGone(
  stores: MiniClusterStores,
  mc: MiniCluster,
  desired: DesiredChildren,
): Problem[] {
  if (desired.curveSecret) return []; // the user's certificate is applied when it differs
  const ns = mc.metadata?.namespace;
  return curveProblems(stores.secrets.get(ns, curveSecretName(mc)), ownJob(stores, mc));
}

/** One condition for several problems: the first one's reason, every message. */
function summary(problems: Problem[]): Problem | undefined {
  if (problems.length === 0) return undefined;
  return { reason: problems[0].reason, message: joinedMessages(problems.map((p) => p.message)) };
}
