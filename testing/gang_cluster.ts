/**
 * Whether a cluster's API server serves gang scheduling, read from the API server itself (its
 * feature gate metric and its discovery), never from the operator: the oracle of the gang tests.
 */
import { kubectl } from "../hack/kubectl.ts";

export interface GangScheduling {
  /** The GenericWorkload gate; undefined where the API server does not know it (before 1.35). */
  genericWorkload?: boolean;
  /** scheduling.k8s.io/v1beta1 PodGroups are served. */
  podGroups: boolean;
}

export async function gangScheduling(kubeconfig: string): Promise<GangScheduling> {
  const metrics = await kubectl(kubeconfig, ["get", "--raw", "/metrics"]);
  const line = metrics.split("\n").find((l) =>
    l.startsWith("kubernetes_feature_enabled{") && l.includes('name="GenericWorkload"')
  );
  let podGroups = false;
  try {
    const list = await kubectl(kubeconfig, ["get", "--raw", "/apis/scheduling.k8s.io/v1beta1"]);
    podGroups = JSON.parse(list).resources.some((r: { name: string }) => r.name === "podgroups");
  } catch {
    // not served
  }
  return {
    ...(line === undefined ? {} : { genericWorkload: line.trim().endsWith(" 1") }),
    podGroups,
  };
}

/** The API server takes ganged pods and their PodGroup. */
export function servesGangs(g: GangScheduling): boolean {
  return g.genericWorkload === true && g.podGroups;
}

/**
 * The message of a scenario that needs gang scheduling on a cluster without it (the scheduler
 * needs the gate too; the API server's is what can be read).
 */
export function gangsNeeded(g: GangScheduling): string {
  return "this scenario needs Kubernetes 1.37 with the feature gate GenericWorkload on (API " +
    "server, scheduler) and --runtime-config=scheduling.k8s.io/v1beta1=true; the cluster's API " +
    `server has GenericWorkload=${g.genericWorkload ?? "unknown"}, PodGroups ${
      g.podGroups ? "served" : "not served"
    }`;
}
