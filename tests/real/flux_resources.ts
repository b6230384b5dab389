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

/**
 * An hwloc topology (the XML of `lstopo --of xml`, hwloc 2) of one package of `cores` cores with
 * `threadsPerCore` hardware threads each, numbered as Linux numbers sibling threads when it keeps
 * them adjacent: core 0 holds PUs 0..threadsPerCore-1, and so on. flux-core reads it from the file
 * named by FLUX_HWLOC_XMLFILE and restricts it to the process's cpuset, as it does a node's.
 */
export function smtTopologyXml(cores: number, threadsPerCore: number): string {
  const mask = (first: number, count: number) =>
    `0x${((2 ** count - 1) * 2 ** first).toString(16).padStart(8, "0")}`;
  const pus = cores * threadsPerCore;
  const all = mask(0, pus);
  const sets = (cpuset: string, extra = "") =>
    `cpuset="${cpuset}" complete_cpuset="${cpuset}"${extra} nodeset="0x00000001" ` +
    `complete_nodeset="0x00000001"`;
  let gp = 10;
  const coreObjects = Array.from({ length: cores }, (_, core) => {
    const first = core * threadsPerCore;
    const puObjects = Array.from(
      { length: threadsPerCore },
      (_, t) =>
        `        <object type="PU" os_index="${first + t}" ${sets(mask(first + t, 1))} ` +
        `gp_index="${gp++}"/>`,
    );
    return [
      `      <object type="Core" os_index="${core}" ${sets(mask(first, threadsPerCore))} ` +
      `gp_index="${gp++}">`,
      ...puObjects,
      "      </object>",
    ];
  }).flat();
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<!DOCTYPE topology SYSTEM "hwloc2.dtd">`,
    `<topology version="2.0">`,
    `  <object type="Machine" os_index="0" ${
      sets(all, ` allowed_cpuset="${all}"`)
    } allowed_nodeset="0x00000001" gp_index="1">`,
    `    <object type="Package" os_index="0" ${sets(all)} gp_index="2">`,
    `      <object type="NUMANode" os_index="0" ${sets(all)} gp_index="3" ` +
    `local_memory="1073741824">`,
    `        <page_type size="4096" count="262144"/>`,
    `      </object>`,
    ...coreObjects,
    `    </object>`,
    `  </object>`,
    `</topology>`,
    "",
  ].join("\n");
}
