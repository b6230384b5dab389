// The admin kubeconfig. Certificates are embedded (`*-data`) so the file keeps working when
// copied elsewhere, and so clients need no file-path resolution.

import { stringify } from "yaml";

export interface KubeconfigInput {
  server: string;
  caCertPem: string;
  clientCertPem: string;
  clientKeyPem: string;
  name?: string;
}

const b64 = (s: string) => btoa(s);

export function renderKubeconfig(input: KubeconfigInput): string {
  const name = input.name ?? "minicluster-local";
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name,
      cluster: { server: input.server, "certificate-authority-data": b64(input.caCertPem) },
    }],
    users: [{
      name: `${name}-admin`,
      user: {
        "client-certificate-data": b64(input.clientCertPem),
        "client-key-data": b64(input.clientKeyPem),
      },
    }],
    contexts: [{ name, context: { cluster: name, user: `${name}-admin`, namespace: "default" } }],
    "current-context": name,
    preferences: {},
  });
}
