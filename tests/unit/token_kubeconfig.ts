// A kubeconfig file for unit tests whose client talks to a server of the test's own (or to none).
import { join } from "node:path";

/** A kubeconfig file with one context: `server`, a bearer token, and `namespace` if given. */
export interface TokenKubeconfig {
  path: string;
  /** Deletes the file and its temporary directory. */
  remove(): Promise<void>;
}

export async function tokenKubeconfig(
  server: string,
  namespace?: string,
): Promise<TokenKubeconfig> {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "kubeconfig");
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u", namespace } }],
      "current-context": "x",
    }),
  );
  return { path, remove: () => Deno.remove(dir, { recursive: true }) };
}
