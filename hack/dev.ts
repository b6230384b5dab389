// deno task dev [operator flags] — the operator of this checkout against the current cluster, with
// readable logs and exactly the permission flags of the compiled binary (`deno task compile`).
//
// Which cluster: $KUBECONFIG when it is set (the operator reads it itself), else .cluster/kubeconfig
// when a local cluster (`./task cluster up`) has written one, else the operator's own defaults
// (in-cluster, ~/.kube/config). Flags are passed on and win over these (`deno task dev
// --namespaces=default --log-level=debug`). SIGINT/SIGTERM reach the operator, which drains and
// exits; this launcher exits with its code.

import { join, resolve } from "node:path";
import { compilePermissions } from "./permissions.ts";

const ROOT = resolve(new URL("..", import.meta.url).pathname);

/**
 * The operator's kubeconfig flag: none when $KUBECONFIG is set or no local cluster exists (the
 * operator's own resolution applies), else the local cluster's kubeconfig.
 */
export function kubeconfigArgs(
  env: { KUBECONFIG?: string },
  localKubeconfig: string,
  localExists: boolean,
): string[] {
  if (env.KUBECONFIG) return [];
  return localExists ? [`--kubeconfig=${localKubeconfig}`] : [];
}

/**
 * `deno` arguments that run the operator: run, the compile task's flags, mod.ts, its flags. Plus
 * `--allow-run`, which the image does not have: a developer's kubeconfig for a cloud cluster runs
 * an exec credential plugin (aws, gke-gcloud-auth-plugin, kubelogin).
 */
export function devArgs(
  denoJson: string,
  kubeconfig: string[],
  extra: readonly string[],
): string[] {
  return [
    "run",
    ...compilePermissions(denoJson),
    "--allow-run",
    join(ROOT, "mod.ts"),
    ...kubeconfig,
    "--log-format=text",
    ...extra,
  ];
}

async function main(): Promise<number> {
  const local = join(ROOT, ".cluster", "kubeconfig");
  const localExists = await Deno.stat(local).then((s) => s.isFile, () => false);
  const kubeconfig = kubeconfigArgs({ KUBECONFIG: Deno.env.get("KUBECONFIG") }, local, localExists);
  const args = devArgs(await Deno.readTextFile(join(ROOT, "deno.json")), kubeconfig, Deno.args);
  console.error(`[dev] deno ${args.join(" ")}`);
  const child = new Deno.Command(Deno.execPath(), { args, cwd: ROOT }).spawn();
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(sig, () => {
      try {
        child.kill(sig);
      } catch {
        // Already exited.
      }
    });
  }
  return (await child.status).code;
}

if (import.meta.main) Deno.exit(await main());
