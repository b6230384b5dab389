/**
 * Whether a cluster's API server serves Job gang scheduling, read from the API server itself (its
 * feature gate metric and its discovery), never from the operator: the oracle of the gang tests.
 */
import { kubectl } from "../hack/kubectl.ts";

export interface GangScheduling {
  /** The WorkloadWithJob gate; undefined where the API server does not know it (before 1.36). */
  workloadWithJob?: boolean;
  /** scheduling.k8s.io/v1beta1 PodGroups are served. */
  podGroups: boolean;
}

export async function gangScheduling(kubeconfig: string): Promise<GangScheduling> {
  const metrics = await kubectl(kubeconfig, ["get", "--raw", "/metrics"]);
  const line = metrics.split("\n").find((l) =>
    l.startsWith("kubernetes_feature_enabled{") && l.includes('name="WorkloadWithJob"')
  );
  let podGroups = false;
  try {
    const list = await kubectl(kubeconfig, ["get", "--raw", "/apis/scheduling.k8s.io/v1beta1"]);
    podGroups = JSON.parse(list).resources.some((r: { name: string }) => r.name === "podgroups");
  } catch {
    // not served
  }
  return {
    ...(line === undefined ? {} : { workloadWithJob: line.trim().endsWith(" 1") }),
    podGroups,
  };
}

/** Both: a ganged Job gets its Workload and PodGroup. */
export function servesGangs(g: GangScheduling): boolean {
  return g.workloadWithJob === true && g.podGroups;
}

/**
 * The message of a scenario that needs gang scheduling on a cluster without it (the controller
 * manager and the scheduler need the gates too; the API server's are what can be read).
 */
export function gangsNeeded(g: GangScheduling): string {
  return "this scenario needs Kubernetes 1.37 with the feature gates GenericWorkload and " +
    "WorkloadWithJob on (API server, controller manager, scheduler) and " +
    "--runtime-config=scheduling.k8s.io/v1beta1=true; the cluster's API server has " +
    `WorkloadWithJob=${g.workloadWithJob ?? "unknown"}, PodGroups ${
      g.podGroups ? "served" : "not served"
    }`;
}
