// The Kubernetes version of a cluster's binaries, and what the components are started with
// because of it. The binaries say their own version (`kube-apiserver --version`), so a
// cluster built from any K8S_VERSION, or from $MINICLUSTER_BIN_DIR, gets the flags that version
// knows: a flag or feature gate an older binary does not know stops it at start-up.

import { join } from "node:path";

export interface KubernetesVersion {
  major: number;
  minor: number;
  /** As the binary reports it, e.g. "v1.37.2". */
  text: string;
}

/** "Kubernetes v1.37.2" (the output of `--version`) or "v1.37.2". */
export function parseKubernetesVersion(output: string): KubernetesVersion {
  const m = output.match(/v(\d+)\.(\d+)\.\d+\S*/);
  if (!m) throw new Error(`not a Kubernetes version: ${JSON.stringify(output.trim())}`);
  return { major: Number(m[1]), minor: Number(m[2]), text: m[0] };
}

/** The version kube-apiserver in `binDir` reports. */
export async function binariesVersion(binDir: string): Promise<string> {
  const out = await new Deno.Command(join(binDir, "kube-apiserver"), {
    args: ["--version"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`${join(binDir, "kube-apiserver")} --version failed`);
  return parseKubernetesVersion(new TextDecoder().decode(out.stdout)).text;
}

function atLeast(v: KubernetesVersion, major: number, minor: number): boolean {
  return v.major > major || (v.major === major && v.minor >= minor);
}

/**
 * Workloads and gang scheduling (1.37, both gates off by default): `GenericWorkload` serves the
 * `scheduling.k8s.io/v1beta1` Workload and PodGroup (storage, the PodGroup admission that adds a
 * protection finalizer, the scheduler's gang plugin, which binds none of a group's pods until
 * `minCount` of them fit); `WorkloadWithJob` adds the Job field `spec.scheduling` and makes the
 * Job controller keep a Workload and PodGroup for every Job no other controller owns (basic
 * scheduling unless the field asks for a gang; a MiniCluster's Job is owned by its MiniCluster,
 * so it gets none). Needed by the apiserver, the controller manager and the scheduler. Older
 * versions are started without them: 1.35 and 1.36 have alpha shapes of the same API that differ
 * from 1.37's (1.36's `WorkloadWithJob` gangs every Indexed Job whose parallelism equals its
 * completions, without a Job field).
 */
const WORKLOAD_FEATURE_GATES = ["GenericWorkload", "WorkloadWithJob"] as const;

/** What a component of a cluster of version `version` is started with beyond its usual flags. */
export interface VersionFlags {
  /** `--feature-gates` of kube-apiserver, kube-controller-manager and kube-scheduler. */
  featureGates: string[];
  /** `--runtime-config` of kube-apiserver: beta API versions are served only when asked for. */
  runtimeConfig: string[];
  /** Controllers of kube-controller-manager beyond components.ts' CONTROLLERS. */
  controllers: string[];
}

export function versionFlags(version: string): VersionFlags {
  const v = parseKubernetesVersion(version);
  if (!atLeast(v, 1, 37)) return { featureGates: [], runtimeConfig: [], controllers: [] };
  return {
    featureGates: WORKLOAD_FEATURE_GATES.map((g) => `${g}=true`),
    runtimeConfig: ["scheduling.k8s.io/v1beta1=true"],
    // Removes the finalizer admission puts on every PodGroup once none of its pods is active:
    // without it a deleted PodGroup, and so its namespace, is never gone.
    controllers: ["podgroup-protection-controller"],
  };
}
