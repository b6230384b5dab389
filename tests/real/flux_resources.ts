// Reading what a real pod was granted and what its Flux instance holds (pure, unit-tested in
// tests/unit/broker_cores_test.ts).

/** A row of `flux resource list`: its nodes and cores, or undefined when the state is absent. */
export function resourceRow(
  list: string,
  state: string,
): { nodes: number; cores: number } | undefined {
  const line = list.split("\n").find((l) => l.trim().startsWith(`${state} `));
  if (line === undefined) return undefined;
  const [, nodes, cores] = line.trim().split(/\s+/);
  return { nodes: Number(nodes), cores: Number(cores) };
}

/**
 * The whole CPUs a container's cgroup quota allows (cgroup v2 `cpu.max`, or v1's
 * `cpu.cfs_quota_us`/`cpu.cfs_period_us`, as printed by CPU_QUOTA); undefined when unlimited.
 */
export function quotaCpus(text: string): number | undefined {
  const [quota, period] = text.trim().split(/\s+/);
  if (quota === "max" || quota === "-1" || !Number(period)) return undefined;
  return Math.floor(Number(quota) / Number(period));
}

/** Prints the container's CPU quota and period, on cgroup v2 or v1. */
export const CPU_QUOTA = "cat /sys/fs/cgroup/cpu.max 2>/dev/null || " +
  "echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)";
