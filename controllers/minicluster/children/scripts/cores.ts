/**
 * The cores each broker advertises in the resource set (R), and the script lines that write R.
 *
 * With a CPU request or limit on the Flux container, every rank gets that many cores
 * (`flux R encode --cores=0-<n-1>`), so brokers sharing a node advertise what Kubernetes granted
 * their pods rather than the node's cores each, and `flux run -n` waits instead of oversubscribing.
 * The number is computed here from the spec, not read in the pod: every broker then writes the
 * same R (the lead broker's R lists every rank and each rank checks its own part against it), and
 * the count is visible in the entrypoint ConfigMap. A request or limit that admission adds later
 * (a LimitRange default) is not seen; such pods advertise the node's cores.
 *
 * Without CPU resources nothing was granted, so there is nothing better to say than the node's
 * hwloc topology (`--local`), as the Go operator writes it.
 */
import { parseQuantity } from "../../diff.ts";
import type { ContainerInput } from "./input.ts";

/**
 * The cores a broker advertises: the CPU request (what the scheduler reserves on the node, so the
 * brokers of one node never sum to more than its allocatable; Kubernetes copies the limit into an
 * absent request), else the limit; rounded down to whole cores, at least 1. Undefined without
 * either, or when the quantity is not a number.
 */
export function brokerCores(container: ContainerInput): number | undefined {
  const { requests, limits } = container.resources ?? {};
  const quantity = requests?.cpu ?? limits?.cpu;
  if (quantity === undefined) return undefined;
  const cpus = typeof quantity === "number" ? quantity : parseQuantity(String(quantity));
  if (cpus === undefined || !Number.isFinite(cpus) || cpus < 0) return undefined;
  // Millicores are Kubernetes' precision; rounding to them first keeps 0.1 * 30 from flooring to 2.
  return Math.max(1, Math.floor(Math.round(cpus * 1000) / 1000));
}

/** Lines that write the resource set of all brokers to `${configroot}/etc/flux/system/R`. */
export function resourceSetLines(container: ContainerInput, quiet: boolean): string[] {
  const cores = brokerCores(container);
  const write = [
    `mv /tmp/R "\${configroot}/etc/flux/system/R"`,
    ...(quiet ? [] : [`cat "\${configroot}/etc/flux/system/R"`]),
  ];
  const hosts = `hosts=$(cat "\${configroot}/etc/flux/system/hostlist")`;
  if (cores === undefined) {
    return [
      "# The resource set of all brokers",
      hosts,
      ...(quiet
        ? []
        : ["echo", `echo "📦 Resources"`, `echo "flux R encode --hosts=\${hosts} --local"`]),
      `flux R encode --hosts="\${hosts}" --local > /tmp/R`,
      ...write,
    ];
  }
  // An idset range needs two different ends: one core is "0".
  const coreIds = cores === 1 ? "0" : `0-${cores - 1}`;
  return [
    `# The resource set of all brokers: ${cores} core(s) each, the Flux container's CPU resources.`,
    "# Core ids are hwloc's logical ids in the container's cpuset (the CPU manager's pinned cores",
    "# when it pins them); GPUs are the ones hwloc sees here, as with --local.",
    hosts,
    `gpus=$(flux R encode --local | flux R decode --count=gpu)`,
    // An idset range needs two different ends: one GPU is "0".
    `gpuIds=()`,
    `if [ "\${gpus:-0}" -eq 1 ]; then gpuIds=(--gpus=0); fi`,
    `if [ "\${gpus:-0}" -gt 1 ]; then gpuIds=("--gpus=0-$((gpus - 1))"); fi`,
    ...(quiet ? [] : [
      "echo",
      `echo "📦 Resources"`,
      `echo "flux R encode --hosts=\${hosts} --cores=${coreIds} \${gpuIds[*]}"`,
    ]),
    `flux R encode --hosts="\${hosts}" --cores=${coreIds} "\${gpuIds[@]}" > /tmp/R`,
    ...write,
  ];
}
