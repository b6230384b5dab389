/**
 * A client identity of its own for each operator in the comparison, so that the apiserver's
 * audit log tells their requests apart (`audit.ts`): a certificate signed by the private
 * cluster's CA for user `user` in group system:serviceaccounts (so that API Priority and Fairness
 * treats it as a deployed operator's ServiceAccount: FlowSchema service-accounts, priority level
 * workload-low; apf.ts), bound to cluster-admin, and a kubeconfig with it.
 */
import { dirname, join } from "node:path";
import { parse } from "yaml";
import { issueLeaf } from "../../hack/cluster/pki.ts";
import { renderKubeconfig } from "../../hack/cluster/kubeconfig.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { resourceType } from "../../runtime/client/resources.ts";

const ClusterRoleBindings = resourceType(
  "rbac.authorization.k8s.io",
  "v1",
  "clusterrolebindings",
  "ClusterRoleBinding",
  false,
);

interface Kubeconfig {
  clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
}

/** Binds `users` to cluster-admin (both operators need every verb on their kinds). */
export async function bindClusterAdmin(client: KubeClient, users: readonly string[]) {
  await client.apply(ClusterRoleBindings, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "bench-peer-operators" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: users.map((name) => ({ apiGroup: "rbac.authorization.k8s.io", kind: "User", name })),
  }, { fieldManager: "minicluster-bench", force: true });
}

/** Writes `<cluster dir>/<user>.kubeconfig` beside the admin kubeconfig; returns its path. */
export async function kubeconfigFor(adminKubeconfig: string, user: string): Promise<string> {
  const dir = dirname(adminKubeconfig);
  const admin = parse(await Deno.readTextFile(adminKubeconfig)) as Kubeconfig;
  const leaf = await issueLeaf(join(dir, "pki"), user, {
    subject: `/O=system:serviceaccounts/CN=${user}`,
    usage: "clientAuth",
  });
  const path = join(dir, `${user}.kubeconfig`);
  await Deno.writeTextFile(
    path,
    renderKubeconfig({
      server: admin.clusters[0].cluster.server,
      caCertPem: atob(admin.clusters[0].cluster["certificate-authority-data"]),
      clientCertPem: await Deno.readTextFile(leaf.cert),
      clientKeyPem: await Deno.readTextFile(leaf.key),
      name: user,
    }),
  );
  return path;
}
