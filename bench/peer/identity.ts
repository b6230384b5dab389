/**
 * A client identity of its own for each operator in the comparison, so that the apiserver's
 * audit log tells their requests apart (`audit.ts`): a certificate signed by the private
 * cluster's CA for user `user` in group system:masters (the admin's group, so both land in the
 * same API Priority and Fairness schema as before, `exempt`), and a kubeconfig with it.
 */
import { dirname, join } from "node:path";
import { parse } from "yaml";
import { issueLeaf } from "../../hack/cluster/pki.ts";
import { renderKubeconfig } from "../../hack/cluster/kubeconfig.ts";

interface Kubeconfig {
  clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
}

/** Writes `<cluster dir>/<user>.kubeconfig` beside the admin kubeconfig; returns its path. */
export async function kubeconfigFor(adminKubeconfig: string, user: string): Promise<string> {
  const dir = dirname(adminKubeconfig);
  const admin = parse(await Deno.readTextFile(adminKubeconfig)) as Kubeconfig;
  const leaf = await issueLeaf(join(dir, "pki"), user, {
    subject: `/O=system:masters/CN=${user}`,
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
