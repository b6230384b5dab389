/**
 * Which pod's reporter a MiniCluster's queue is read from: a pure function of its spec and the
 * caches, run by each reconcile (no IO).
 *
 * Only the MiniCluster's own lead broker counts: the pod of completion index 0 of the Job the
 * MiniCluster controls (`ownJob`: the Job's controller is the MiniCluster's uid), itself controlled
 * by that Job's uid, found in the pods' index by Job. Nobody can make the operator read another
 * pod for a MiniCluster, and what a pod reports goes to the status and /metrics of the MiniCluster
 * that owns it, never to another's: a tenant can only report numbers about their own MiniCluster.
 * The address is the pod's IP as the kubelet reported it (status.podIP, which the pod's own user
 * cannot write), and the port the spec's.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { DEFAULTS, type MiniCluster } from "../../../api/mod.ts";
import { controllerOf, type Store } from "../../../runtime/cache/store.ts";
import { COMPLETION_INDEX_LABEL } from "../children/names.ts";
import { ownJob, podsOf } from "../kinds/stores.ts";

/** The lead broker's pod as the poller reads it. */
export interface LeadPod {
  readonly name: string;
  readonly uid: string;
  readonly ip: string;
}

/** What a MiniCluster that asks for its queue wants read: the lead pod, or why there is none. */
export interface FluxQueueWant {
  readonly port: number;
  readonly intervalMs: number;
  readonly lead?: LeadPod;
  /** Why no lead pod can be read (when `lead` is absent). */
  readonly noLead?: string;
}

/** What `mc` wants read, or undefined when its spec does not ask for its queue. */
export function fluxQueueWant(
  mc: MiniCluster,
  stores: { jobs: Store<Job>; pods: Store<Pod> },
): FluxQueueWant | undefined {
  const asked = mc.spec?.flux?.queueReport;
  if (!asked || mc.metadata?.deletionTimestamp) return undefined;
  const port = asked.port ?? DEFAULTS.queueReportPort;
  const intervalMs = (asked.intervalSeconds ?? DEFAULTS.queueReportIntervalSeconds) * 1000;
  const job = ownJob(stores, mc);
  if (!job) return { port, intervalMs, noLead: "the Job does not exist" };
  const uid = job.metadata?.uid;
  const leads = podsOf(stores, mc).filter((p) =>
    p.metadata?.labels?.[COMPLETION_INDEX_LABEL] === "0" &&
    uid !== undefined && controllerOf(p)?.uid === uid
  );
  const live = leads.filter((p) => !p.metadata?.deletionTimestamp);
  const running = live.find((p) => p.status?.phase === "Running" && p.status.podIP);
  if (running) {
    const { name = "", uid: podUid = "" } = running.metadata ?? {};
    return { port, intervalMs, lead: { name, uid: podUid, ip: running.status!.podIP! } };
  }
  const finished = (p: Pod) => p.status?.phase === "Succeeded" || p.status?.phase === "Failed";
  const pod = live.find((p) => !finished(p)) ?? live[0] ?? leads[0];
  if (!pod) return { port, intervalMs, noLead: "the lead broker's pod (index 0) does not exist" };
  const phase = pod.metadata?.deletionTimestamp ? "being deleted" : pod.status?.phase ?? "Pending";
  return {
    port,
    intervalMs,
    noLead: `the lead broker's pod ${pod.metadata?.name} is ${phase}${
      phase === "Running" ? " without an IP yet" : ""
    }`,
  };
}
