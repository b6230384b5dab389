/**
 * The Indexed Job that runs the MiniCluster: one pod per Flux broker, completions = parallelism
 * = the sizing's effective size (sizing.ts), pods named `<name>-<index>` in the headless Service's
 * DNS subdomain.
 *
 * Lifecycle (docs/queueing.md):
 * - the Job succeeds when the lead broker (index 0) succeeds (`successPolicy`): the lead broker's
 *   exit ends the workload, and followers still running are stopped by the Job controller instead
 *   of keeping a finished cluster alive;
 * - with spec.gang, the pods name the MiniCluster's PodGroup (`schedulingGroup`, gang.ts);
 * - `spec.suspend` appears only when the user suspends the MiniCluster, so that the operator's
 *   field manager never owns the Job's `spec.suspend` otherwise and a queue controller may suspend
 *   and admit the Job without the operator undoing it. (Resuming a Job the operator alone
 *   suspended may leave it owning `suspend: false`, which the queue controller's next write of the
 *   field takes over; see dependents.ts.) A Job queued by Kueue never carries it: Kueue resumes
 *   an admitted Job someone else suspends, so the user's suspension goes through Kueue's Workload
 *   (queue.ts).
 */
import type {
  Job,
  PodFailurePolicy,
  PodFailurePolicyRule,
  SuccessPolicy,
} from "kubernetes-types/batch/v1.d.ts";
import type { PodSpec } from "kubernetes-types/core/v1.d.ts";
import { fluxViewContainer, jobContainers } from "./pod/containers.ts";
import { schedulingGroup } from "./gang.ts";
import { type FluxView, mountsViewImage, type Sizing } from "./sizing.ts";
import { headlessServiceName, jobName, VIEW_IMAGE_VOLUME } from "./names.ts";
import { KUEUE_QUEUE_LABEL, kueueQueueOf } from "./queue.ts";
import { childMetadata } from "./owner.ts";
import { sortedMap } from "./pod/pod.ts";
import {
  commonPodOptions,
  imagePullSecrets,
  jobAffinity,
  jobOnlyPodOptions,
  jobPodLabels,
  jobRestartPolicy,
  orderedPodSpec,
  podAnnotations,
} from "./pod/pod.ts";
import { LEAD_FAILED_EXIT_CODE } from "./scripts/lead-finished.ts";
import { FLUX_VIEW_EMPTY_EXIT_CODE } from "./scripts/view-environment.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import { drains, operatorVolumes, userVolumes } from "./pod/volumes.ts";

export interface JobOptions {
  /** Leave spec.gang out: the API server does not serve gang scheduling (gang.ts). */
  unganged?: boolean;
  /**
   * Carry `suspend: true`: the user suspends and no Workload of Kueue's carries it out. Default:
   * `spec.suspend` of a MiniCluster whose spec names no queue (what `render` shows).
   */
  suspend?: boolean;
  /** Kueue's queue label (null: none), default the spec's (queue.ts jobQueueLabel). */
  queue?: string | null;
}

export function buildJob(mc: DefaultedMiniCluster, sizing: Sizing, opts: JobOptions = {}): Job {
  const group = opts.unganged ? undefined : schedulingGroup(mc);
  // The view image mounted: no init container copies it, each broker writes its configuration.
  const viewMounted = mountsViewImage(mc, sizing);
  const volumes = [...operatorVolumes(mc, viewMounted), ...userVolumes(mc.spec.containers)];
  assertUnique("volume name", volumes.map((v) => v.name));
  const initContainers = viewMounted ? [] : [fluxViewContainer(mc)];
  const containers = jobContainers(mc, viewMounted);
  assertUnique("container name", [...initContainers, ...containers].map((c) => c.name));
  for (const c of containers) {
    assertUnique(
      `mount path of container ${c.name}:`,
      (c.volumeMounts ?? []).map((m) => m.mountPath),
    );
  }
  const annotations = podAnnotations(mc, [...initContainers, ...containers]);
  const spec: PodSpec = {
    subdomain: headlessServiceName(mc),
    setHostnameAsFQDN: false,
    ...commonPodOptions(mc),
    restartPolicy: jobRestartPolicy(mc),
    ...jobOnlyPodOptions(mc),
    containers,
    ...(initContainers.length > 0 ? { initContainers } : {}),
    volumes,
  };
  const affinity = jobAffinity(mc);
  if (affinity) spec.affinity = affinity;
  if (group) Object.assign(spec, { schedulingGroup: group });
  const pullSecrets = imagePullSecrets(mc.spec.containers, [
    mc.spec.flux.container.imagePullSecret,
  ]);
  if (pullSecrets) spec.imagePullSecrets = pullSecrets;
  const metadata = childMetadata(mc, jobName(mc), jobLabels(mc, opts.queue));
  const jobAnnotations = sortedMap(mc.spec.jobAnnotations);
  if (Object.keys(jobAnnotations).length > 0) metadata.annotations = jobAnnotations;
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata,
    spec: {
      completionMode: "Indexed",
      completions: sizing.effectiveSize,
      parallelism: sizing.effectiveSize,
      backoffLimit: mc.spec.backoffLimit,
      activeDeadlineSeconds: mc.spec.deadlineSeconds,
      ...((opts.suspend ?? (mc.spec.suspend === true && !kueueQueueOf(mc)))
        ? { suspend: true }
        : {}),
      successPolicy: leadBrokerSuccess(),
      ...podFailurePolicy(mc, spec, viewMounted),
      // A draining broker's pod is replaced only once it has ended: a new broker of the same rank
      // saying hello meanwhile makes Flux drop the old one as crashed, with its jobs
      // (scripts/drain.ts). The default with a podFailurePolicy; said for every restartPolicy.
      ...(drains(mc) ? { podReplacementPolicy: "Failed" } : {}),
      template: {
        metadata: { labels: jobPodLabels(mc), ...(annotations ? { annotations } : {}) },
        spec: orderedPodSpec(spec),
      },
    },
  };
}

/**
 * How the pods of a Job that exists get the view: its template mounts the view image or not (the
 * status's observation, and a lost workspace's value).
 */
export function fluxViewOf(job: Job): FluxView {
  const volumes = job.spec?.template?.spec?.volumes ?? [];
  return volumes.some((v) => v.name === VIEW_IMAGE_VOLUME && "image" in v) ? "ImageVolume" : "Copy";
}

/** The image a Job's pods mount the view from ("" when they copy it). */
export function viewImageOf(job: Job): string {
  const volume = job.spec?.template?.spec?.volumes?.find((v) => v.name === VIEW_IMAGE_VOLUME);
  return (volume as { image?: { reference?: string } } | undefined)?.image?.reference ?? "";
}

/** spec.jobLabels with Kueue's queue label as given (undefined: the spec's). */
function jobLabels(
  mc: DefaultedMiniCluster,
  queue: string | null | undefined,
): Record<string, string> | undefined {
  if (queue === undefined) return mc.spec.jobLabels;
  const { [KUEUE_QUEUE_LABEL]: _spec, ...rest } = mc.spec.jobLabels ?? {};
  return queue === null ? rest : { ...rest, [KUEUE_QUEUE_LABEL]: queue };
}

/** The Job succeeds as soon as index 0, the lead broker, has succeeded. */
function leadBrokerSuccess(): SuccessPolicy {
  return { rules: [{ succeededIndexes: "0" }] };
}

/**
 * The Job fails as soon as the lead broker's run has failed: its followers completed with the
 * Flux instance, so a lead broker started again would wait for them forever (lead-finished.ts).
 * With the view image mounted it also fails as soon as a container finds the view empty: the
 * node's runtime cannot mount it, and new pods would only find it empty again (view-environment.ts).
 * The API allows a podFailurePolicy only with restartPolicy Never.
 */
function podFailurePolicy(
  mc: DefaultedMiniCluster,
  pod: PodSpec,
  viewMounted: boolean,
): { podFailurePolicy?: PodFailurePolicy } {
  if (pod.restartPolicy !== "Never") return {};
  const flux = mc.spec.containers.some((c) => c.runFlux);
  const rules: PodFailurePolicyRule[] = [
    ...(flux ? [failJobOn(LEAD_FAILED_EXIT_CODE, jobName(mc))] : []),
    ...(viewMounted ? [failJobOn(FLUX_VIEW_EMPTY_EXIT_CODE)] : []),
  ];
  return rules.length > 0 ? { podFailurePolicy: { rules } } : {};
}

/** FailJob when a container (the named one, or any) exits with `code`. */
function failJobOn(code: number, containerName?: string): PodFailurePolicyRule {
  return {
    action: "FailJob",
    onExitCodes: { ...(containerName ? { containerName } : {}), operator: "In", values: [code] },
  };
}

/**
 * A user volume or container named like one of the operator's (or like the Flux container,
 * which takes the MiniCluster's name) would make every pod invalid: say which name, up front.
 */
function assertUnique(what: string, names: string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw new Error(`${what} ${name} is used twice in the pod`);
    seen.add(name);
  }
}
