/**
 * The cores each broker advertises in the resource set (R), and the script lines that write R.
 *
 * With a CPU request or limit on the Flux container, each broker advertises that many cores
 * (`flux R encode --cores=0-<n-1>`), so brokers sharing a node advertise what Kubernetes granted
 * their pods rather than the node's cores each, and `flux run -n` waits instead of oversubscribing.
 * A Kubernetes CPU is a hardware thread, though, and Flux counts cores: on a node with two threads
 * per core the container's cpuset can hold fewer cores than CPUs (the static CPU manager pins
 * `cpu: 4` to two cores' four threads; without pinning a request can exceed the node's cores), and
 * flux-core drains a rank whose hwloc topology lacks a core that R gives it. So the count from the
 * spec is an upper bound: each broker advertises the smaller of it and the cores hwloc finds in its
 * own cpuset, and says so in its log when that is fewer.
 *
 * How R is shared: every broker writes its own R file, and flux-core loads the configured R on
 * every rank; each rank checks only its own entry against its own hwloc, and rank 0's R is the one
 * the scheduler allocates from. On nodes of one kind every broker finds the same cores, so every
 * file is the same. On mixed nodes the lead broker's count is what every rank is scheduled with: a
 * follower with fewer cores than that is not drained (its own R holds what it has) but gets
 * more tasks than its cores, and its log names the difference.
 *
 * The bound from the spec is visible in the entrypoint ConfigMap. A request or limit that admission
 * adds later (a LimitRange default) is not seen; such pods advertise the node's cores.
 *
 * Without CPU resources nothing was granted, so there is nothing better to say than the node's
 * hwloc topology (`--local`), as the Go operator writes it.
 */
import { parseQuantity } from "../../../kinds/diff.ts";
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
  const granted = brokerCores(container);
  const write = [
    `mv /tmp/R "\${configroot}/etc/flux/system/R"`,
    ...(quiet ? [] : [`cat "\${configroot}/etc/flux/system/R"`]),
  ];
  const hosts = `hosts=$(cat "\${configroot}/etc/flux/system/hostlist")`;
  if (granted === undefined) {
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
  return [
    `# The resource set of all brokers: ${granted} core(s) each, the Flux container's CPU resources,`,
    "# or the cores hwloc finds in this container's cpuset when they are fewer (a Kubernetes CPU is",
    "# a hardware thread, Flux counts cores). Core ids are hwloc's logical ids in the cpuset (the",
    "# CPU manager's pinned cores when it pins them); GPUs are the ones hwloc sees here.",
    hosts,
    `localR=$(flux R encode --local)`,
    `gpus=$(flux R decode --count=gpu <<< "\${localR}")`,
    `found=$(flux R decode --count=core <<< "\${localR}")`,
    `cores=${granted}`,
    `if [ "\${found:-0}" -ge 1 ] && [ "\${found}" -lt "\${cores}" ]; then`,
    // Not silenced by logging.quiet: without it a user sees fewer cores than CPUs and no reason.
    `  echo "The Flux container's CPU resources grant ${granted} CPU(s), but hwloc finds \${found} core(s) in its cpuset (a Kubernetes CPU is a hardware thread): this broker advertises \${found} core(s)" >&2`,
    `  cores=\${found}`,
    `fi`,
    // An idset range needs two different ends: one core (or GPU) is "0".
    `coreIds=0`,
    `if [ "\${cores}" -gt 1 ]; then coreIds="0-$((cores - 1))"; fi`,
    `gpuIds=()`,
    `if [ "\${gpus:-0}" -eq 1 ]; then gpuIds=(--gpus=0); fi`,
    `if [ "\${gpus:-0}" -gt 1 ]; then gpuIds=("--gpus=0-$((gpus - 1))"); fi`,
    ...(quiet ? [] : [
      "echo",
      `echo "📦 Resources"`,
      `echo "flux R encode --hosts=\${hosts} --cores=\${coreIds} \${gpuIds[*]}"`,
    ]),
    `flux R encode --hosts="\${hosts}" --cores="\${coreIds}" "\${gpuIds[@]}" > /tmp/R`,
    ...write,
  ];
}
