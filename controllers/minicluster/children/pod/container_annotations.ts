/**
 * Pod annotations whose key names one container of the pod: AppArmor's
 * `container.apparmor.security.beta.kubernetes.io/<container>`. The apiserver refuses a pod or pod
 * template with one that names a container the pod does not have ("container not found"), and
 * `spec.pod.annotations` goes on two pods with different containers (the Job's and the services
 * pod), so each pod takes only those naming its own containers. One naming no container of either
 * pod would go nowhere: it is a spec problem, reported instead of dropped.
 *
 * The seccomp annotations of the same shape are not among them: the apiserver does not tie them
 * to a container and nothing reads them since Kubernetes 1.27, so they go on every pod as given.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";

/** The AppArmor annotation of a container (kube-apiserver copies it into the container's field). */
export const APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/";

/** The container a container-scoped annotation key names, or undefined for any other key. */
function annotatedContainer(key: string): string | undefined {
  return key.startsWith(APPARMOR_ANNOTATION_PREFIX)
    ? key.slice(APPARMOR_ANNOTATION_PREFIX.length)
    : undefined;
}

/** `annotations` without the container-scoped ones naming a container the pod does not have. */
export function annotationsForPod(
  annotations: Record<string, string>,
  containers: Container[],
): Record<string, string> {
  const names = new Set(containers.map((c) => c.name));
  return Object.fromEntries(
    Object.entries(annotations).filter(([key]) => {
      const container = annotatedContainer(key);
      return container === undefined || names.has(container);
    }),
  );
}

/**
 * One problem per container-scoped annotation that names a container neither the Job's pods (init
 * containers included) nor the services pod has.
 */
export function unknownContainerProblems(
  annotations: Record<string, string>,
  job: Job,
  servicesPod: Pod | undefined,
): string[] {
  const template = job.spec?.template.spec;
  const pods: [string, Container[]][] = [
    ["the Job's pods", [...(template?.initContainers ?? []), ...(template?.containers ?? [])]],
  ];
  if (servicesPod) pods.push(["the services pod", servicesPod.spec?.containers ?? []]);
  const names = new Set(pods.flatMap(([, containers]) => containers.map((c) => c.name)));
  const inPods = pods.map(([what, containers]) =>
    `${what}: ${containers.map((c) => c.name).join(", ")}`
  ).join("; ");
  return Object.keys(annotations).sort().flatMap((key) => {
    const container = annotatedContainer(key);
    if (container === undefined || names.has(container)) return [];
    return [
      `spec.pod.annotations: "${key}" names container "${container}", which no pod of the MiniCluster has (${inPods})`,
    ];
  });
}
