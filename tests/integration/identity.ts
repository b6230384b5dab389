/**
 * Identities other than the admin's, for tests on a real apiserver: a kubeconfig of the test's
 * cluster whose user is the test's choice (a bearer token, an exec plugin), fresh tokens of a
 * ServiceAccount (TokenRequest API), and the RBAC kinds that grant them rights.
 */
import { stringify } from "yaml";
import { loadKubeconfig } from "../../runtime/config/kubeconfig.ts";
import { resourcePath, resourceType, ServiceAccounts } from "../../runtime/client/resources.ts";
import type { TestEnv } from "../harness.ts";

const RBAC = "rbac.authorization.k8s.io";
export const ClusterRoles = resourceType(RBAC, "v1", "clusterroles", "ClusterRole", false);
export const Roles = resourceType(RBAC, "v1", "roles", "Role", true);
export const RoleBindings = resourceType(RBAC, "v1", "rolebindings", "RoleBinding", true);

/**
 * Writes `dir`/kubeconfig: the admin's cluster, `user` (a kubeconfig user stanza: `{ token }`,
 * `{ exec }`), and the test namespace as the context's. Returns its path.
 */
export async function kubeconfigAs(
  env: TestEnv,
  dir: string,
  user: Record<string, unknown>,
): Promise<string> {
  const admin = await loadKubeconfig(env.kubeconfig);
  const path = `${dir}/kubeconfig`;
  await Deno.writeTextFile(
    path,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "test",
        cluster: {
          server: admin.server,
          "certificate-authority-data": btoa(admin.caCerts?.join("\n") ?? ""),
        },
      }],
      users: [{ name: "test", user }],
      contexts: [{
        name: "test",
        context: { cluster: "test", user: "test", namespace: env.namespace },
      }],
      "current-context": "test",
    }),
  );
  return path;
}

/** A kubeconfig user stanza that runs the credential plugin `command`. */
export function execUser(command: string): Record<string, unknown> {
  return { exec: { apiVersion: "client.authentication.k8s.io/v1", command } };
}

/** A fresh token (valid for an hour) of the ServiceAccount `name` in the test namespace. */
export async function serviceAccountToken(env: TestEnv, name: string): Promise<string> {
  const review = await env.client.request<{ status: { token: string } }>(
    "POST",
    resourcePath(ServiceAccounts, { namespace: env.namespace, name, subresource: "token" }),
    {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 3600 },
    },
    { verb: "create", resource: "serviceaccounts/token" },
  );
  return review.status.token;
}
