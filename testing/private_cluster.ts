/**
 * A local cluster owned by one process (a test run, a benchmark): started in a fresh temporary
 * directory, stopped and removed when that process unloads, and swept by the next run when the
 * process was killed before it could (Ctrl-C, SIGKILL, a crash).
 *
 * Layout: `<tmp>/<prefix>XXXX/owner.pid` names the owning process, and the cluster lives one level
 * down in `cluster/`, because `up` wipes the directory it is given: an owner file inside it would
 * be gone by the time a sweep looks for it.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { downSync } from "../hack/cluster/lifecycle.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const OWNER_FILE = "owner.pid";
const CLUSTER_DIR = "cluster";

export interface PrivateClusterOptions {
  /** Prefix of the temporary directory; a sweep looks only at directories with it. */
  prefix: string;
  /** Fake KWOK nodes of a full cluster. Default 4. */
  nodes?: number;
  /** etcd and kube-apiserver only (no controller manager, scheduler or nodes). */
  controlPlaneOnly?: boolean;
  /** Extra kube-apiserver flags, e.g. `--enable-admission-plugins=AlwaysPullImages`. */
  apiserverArgs?: string[];
  /** An apiserver audit policy (YAML): its log is `<dir>/logs/audit.log` (hack/cluster/state.ts). */
  auditPolicy?: string;
}

/** Starts the cluster (sweeping abandoned ones of the same prefix first); resolves its kubeconfig. */
export async function startPrivateCluster(opts: PrivateClusterOptions): Promise<string> {
  sweepAbandoned(opts.prefix);
  const owned = await Deno.makeTempDir({ prefix: opts.prefix });
  await Deno.writeTextFile(join(owned, OWNER_FILE), String(Deno.pid));
  const dir = join(owned, CLUSTER_DIR);
  // Registered before starting, so that even a half-started cluster is stopped.
  globalThis.addEventListener("unload", () => removePrivateCluster(owned));
  const args = opts.controlPlaneOnly ? ["--control-plane-only"] : [`--nodes=${opts.nodes ?? 4}`];
  for (const flag of opts.apiserverArgs ?? []) args.push(`--apiserver-arg=${flag}`);
  if (opts.auditPolicy) {
    const policy = join(owned, "audit-policy.yaml");
    await Deno.writeTextFile(policy, opts.auditPolicy);
    args.push(`--audit-policy=${policy}`);
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(ROOT, "hack", "cluster.ts"), "up", "--dir", dir, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`starting a cluster in ${dir} failed (see above)`);
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  return lines[lines.length - 1];
}

/**
 * Stops and removes the private clusters of `prefix` whose owning process is gone. A directory
 * without an owner file is being set up right now (or is not ours to judge) and is left alone.
 */
export function sweepAbandoned(prefix: string, tmp = Deno.env.get("TMPDIR") || "/tmp"): string[] {
  const swept: string[] = [];
  for (const entry of Deno.readDirSync(tmp)) {
    if (!entry.isDirectory || !entry.name.startsWith(prefix)) continue;
    const owned = join(tmp, entry.name);
    let owner: number;
    try {
      owner = Number(Deno.readTextFileSync(join(owned, OWNER_FILE)));
    } catch {
      continue;
    }
    if (Number.isInteger(owner) && owner > 0 && !processExists(owner)) {
      removePrivateCluster(owned);
      swept.push(owned);
    }
  }
  return swept;
}

/** Stops the cluster kept under `owned` and removes the directory. */
function removePrivateCluster(owned: string): void {
  downSync(join(owned, CLUSTER_DIR));
  try {
    Deno.removeSync(owned, { recursive: true });
  } catch {
    // already gone
  }
}

function processExists(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}
