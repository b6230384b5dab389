/**
 * What the operator's caches keep of the Job's pods and of Jobs: only what the reconciler reads.
 *
 * At 1,000 MiniClusters of size 4 the pod cache holds 4,000 pods, each several KiB of spec and
 * status the operator never looks at. The reconciler reads of a Job's pod only its identity, labels,
 * owner, creation and deletion times, its phase and whether it is Ready (status.ts); of a Job, its
 * metadata and spec (compared with the desired Job by diff.ts) and its conditions (status.ts), not
 * the counters the Job controller updates with every pod change. Dropping the rest saves memory and,
 * because the store only wakes listeners for changes it can see, also the reconciles a pod's or a
 * Job's irrelevant updates would cause.
 *
 * The lead broker's pod (completion index 0) also keeps its IP, which the queue reporter's reads
 * need (fluxqueue/lead.ts): one string per MiniCluster, changed only when the pod starts.
 *
 * A pod that cannot start also keeps why, for the Ready condition's message: its PodScheduled
 * condition while it is False (the scheduler's reason and message), and the containers waiting for a
 * reason other than the routine ContainerCreating/PodInitializing (ImagePullBackOff,
 * CreateContainerConfigError, CrashLoopBackOff, ...), and of such a container that last ended on
 * an empty Flux view, that exit code. A healthy pod keeps none of this. A broker's container that
 * ended after its drain hook cancelled jobs keeps its termination message (drain_condition.ts).
 *
 * The services pod is a child the reconciler compares field by field: pods not owned by a Job are
 * kept whole.
 *
 * ConfigMaps and Secrets keep a digest of each value instead of the value (`dataView`): the
 * reconciler only asks whether the data is what it would write, never reads it (the workspace,
 * which it does read, is kept whole). The entrypoint scripts are most of the cache's bytes (about
 * 8 KiB per MiniCluster), and a Secret's key then never sits in the operator's heap.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type {
  ConfigMap,
  ContainerStatus,
  Pod,
  PodCondition,
  Secret,
} from "kubernetes-types/core/v1.d.ts";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import { controllerOf } from "../../../runtime/cache/store.ts";
import { foundViewEmpty, isUnscheduled, reportableWait } from "../status/status.ts";
import { drainGraceExpired } from "../status/drain_condition.ts";
import { isWorkspace } from "../workspace/legacy_workspace.ts";
import { COMPLETION_INDEX_LABEL } from "../children/names.ts";

/** A Job's pod reduced to what status.ts and the reconciler read; other pods unchanged. */
export function podView(pod: Pod): Pod {
  if (controllerOf(pod)?.kind !== "Job") return pod;
  const m = pod.metadata ?? {};
  const metadata: ObjectMeta = {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    creationTimestamp: m.creationTimestamp,
    deletionTimestamp: m.deletionTimestamp,
    ...(m.deletionGracePeriodSeconds !== undefined
      ? { deletionGracePeriodSeconds: m.deletionGracePeriodSeconds }
      : {}),
    labels: m.labels,
    ownerReferences: m.ownerReferences,
  };
  const conditions = (pod.status?.conditions ?? []).flatMap((c): PodCondition[] => {
    if (c.type === "Ready") return [{ type: c.type, status: c.status }];
    if (isUnscheduled(c)) {
      const { type, status, reason, message } = c;
      return [{ type, status, ...(reason ? { reason } : {}), ...(message ? { message } : {}) }];
    }
    return [];
  });
  const initContainerStatuses = stuckContainers(pod.status?.initContainerStatuses);
  const containerStatuses = stuckContainers(pod.status?.containerStatuses, true);
  return {
    apiVersion: pod.apiVersion,
    kind: pod.kind,
    metadata,
    status: {
      phase: pod.status?.phase,
      // The lead broker's address, for the queue reporter's reads (fluxqueue/lead.ts).
      // Kept once Running, which comes with or after the IP: no event of its own.
      ...(pod.status?.podIP && pod.status.phase === "Running" &&
          m.labels?.[COMPLETION_INDEX_LABEL] === "0"
        ? { podIP: pod.status.podIP }
        : {}),
      ...(conditions.length ? { conditions } : {}),
      ...(initContainerStatuses ? { initContainerStatuses } : {}),
      ...(containerStatuses ? { containerStatuses } : {}),
    },
  };
}

/**
 * The containers waiting for a reason worth reporting, reduced to name, reason and message; with
 * `drained`, also a container that ended after its drain hook cancelled jobs, with its termination
 * message (drain_condition.ts).
 */
function stuckContainers(
  statuses?: ContainerStatus[],
  drained = false,
): ContainerStatus[] | undefined {
  const stuck: ContainerStatus[] = [];
  for (const cs of statuses ?? []) {
    if (drained && drainGraceExpired(cs)) {
      const { exitCode, message } = cs.state!.terminated!;
      stuck.push(
        { name: cs.name, state: { terminated: { exitCode, message } } } as ContainerStatus,
      );
      continue;
    }
    const waiting = reportableWait(cs);
    if (!waiting) continue;
    // The view keeps only what status.ts reads; the API's required fields are not among it.
    const { reason, message } = waiting;
    const view = {
      name: cs.name,
      state: { waiting: message ? { reason, message } : { reason } },
      ...(foundViewEmpty(cs)
        ? { lastState: { terminated: { exitCode: cs.lastState!.terminated!.exitCode } } }
        : {}),
    };
    stuck.push(view as ContainerStatus);
  }
  return stuck.length ? stuck : undefined;
}

/** A Job without the status counters: metadata, spec and conditions stay. */
export function jobView(job: Job): Job {
  const conditions = job.status?.conditions;
  const { status: _, ...rest } = job;
  return conditions?.length ? { ...rest, status: { conditions } } : rest;
}

/** Objects `dataView` made (so a view of a view is the view itself, not digests of digests). */
const digested = new WeakSet<object>();

/**
 * A ConfigMap or Secret with every `data`/`binaryData`/`stringData` value replaced by its digest
 * (the workspace ConfigMap unchanged). Compare two objects only after passing both through it.
 */
export function dataView<T extends ConfigMap | Secret>(obj: T): T {
  if (digested.has(obj) || isWorkspace(obj)) return obj;
  const view = { ...obj } as T & Record<string, unknown>;
  for (const field of ["data", "binaryData", "stringData"] as const) {
    const values = (obj as Record<string, unknown>)[field] as Record<string, string> | undefined;
    if (!values) continue;
    view[field] = Object.fromEntries(
      Object.entries(values).map(([k, v]) => [k, typeof v === "string" ? digestOf(v) : v]),
    );
  }
  digested.add(view);
  return view;
}

/**
 * A 64-bit digest of a string (two 32-bit multiply-xorshift lanes over its UTF-16 code units), with
 * its length. Not cryptographic: it tells our own value from a changed one; whoever could craft a
 * collision can already edit the object. Synchronous, because cache transforms are.
 */
export function digestOf(text: string): string {
  let a = 0x9e3779b9 ^ text.length;
  let b = 0x85ebca6b ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x5bd1e995);
    a ^= a >>> 15;
    b = Math.imul(b ^ c, 0x27d4eb2f);
    b ^= b >>> 13;
  }
  a = Math.imul(a ^ (a >>> 16), 0x85ebca6b) ^ Math.imul(b ^ (b >>> 13), 0xc2b2ae35);
  b = Math.imul(b ^ (b >>> 16), 0x27d4eb2f) ^ (a >>> 11);
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0");
  return `digest:${text.length}:${hex(a)}${hex(b)}`;
}
