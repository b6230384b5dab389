// What real nodes change on the machine, and how `down` puts it back: the bridge, firewall
// chains, `ip_forward`, mounts, cgroups and the host paths that the kubelet and containerd create
// whatever their flags say. Everything changed is recorded (HostRecord) before it is changed.

import { BRIDGE, BRIDGE_IP, POD_NETWORK } from "./real_node_config.ts";

/** What the machine looked like before the first real node started, and what we added. */
export interface HostRecord {
  /** /proc/sys/net/ipv4/ip_forward before (the CNI bridge plugin turns it on). */
  ipForward: string;
  /** Paths the kubelet or containerd create outside the cluster directory that did not exist. */
  absentPaths: string[];
  /**
   * Whether chains of the kubelet and kube-proxy (KUBE-*) or of the CNI plugins (CNI-*) existed
   * before, in any table of iptables or ip6tables: then they are not ours to remove.
   */
  chainsExisted: boolean;
}

/** Created by the kubelet, containerd or the CNI plugins even when told to use other paths. */
const HOST_PATHS = [
  "/var/lib/kubelet",
  "/var/log/containers",
  "/var/log/pods",
  "/var/lib/cni",
  // containerd (1.6 and 2) keeps its shims' sockets (s), fifos and runc's state here whatever its
  // configured state directory; on a machine with a containerd of its own, only what we added.
  "/run/containerd",
  "/run/containerd/s",
  "/run/containerd/fifo",
  "/run/containerd/runc/k8s.io",
  "/opt/containerd",
  "/etc/cni",
];

const IP_FORWARD = "/proc/sys/net/ipv4/ip_forward";
const FORWARD_CHAIN = "MC-REAL-FORWARD";
const INPUT_CHAIN = "MC-REAL-INPUT";

export async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdin: "null", stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder();
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")}: exit ${out.code}: ${text.decode(out.stderr).trim()}`,
    );
  }
  return text.decode(out.stdout);
}

const attempt = (cmd: string, args: string[]) => run(cmd, args).then(() => true, () => false);

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

/**
 * What a real node needs of the machine, as a list of what is missing (empty when all is there):
 * root, overlayfs, cgroups, and the commands of the Debian packages installed before (`runtime`:
 * those of the container runtime, when it comes from Debian).
 */
export async function missingForRealNodes(runtime: readonly string[]): Promise<string[]> {
  const missing: string[] = [];
  if (Deno.uid() !== 0) missing.push(`root (running as uid ${Deno.uid()})`);
  const filesystems = await Deno.readTextFile("/proc/filesystems").catch(() => "");
  if (!/\boverlay\b/.test(filesystems)) missing.push("the overlay filesystem (modprobe overlay)");
  const cgroups = await Deno.readTextFile("/proc/self/mountinfo").catch(() => "");
  if (!/ - cgroup2? /.test(cgroups)) missing.push("a mounted cgroup hierarchy (/sys/fs/cgroup)");
  for (const cmd of ["ip", "iptables", ...runtime, "mount", "umount"]) {
    if (!await attempt("sh", ["-c", `command -v ${cmd}`])) missing.push(`the command ${cmd}`);
  }
  if (!await exists("/usr/lib/cni/bridge")) missing.push("the CNI plugins in /usr/lib/cni");
  return missing;
}

export async function recordHost(): Promise<HostRecord> {
  const absentPaths: string[] = [];
  for (const p of HOST_PATHS) if (!await exists(p)) absentPaths.push(p);
  return {
    ipForward: (await Deno.readTextFile(IP_FORWARD)).trim(),
    absentPaths,
    chainsExisted: (await foreignChains()).length > 0,
  };
}

/** Throws when the bridge exists and belongs to another cluster directory. */
export async function assertBridgeFree(owner: string): Promise<void> {
  const alias = await bridgeOwner();
  if (alias === undefined || alias === owner) return;
  throw new Error(
    `the bridge ${BRIDGE} belongs to the cluster in ${alias || "(unknown)"}: ` +
      `run \`deno task cluster down --dir ${alias || "<dir>"}\` first (one cluster with real ` +
      `nodes per machine)`,
  );
}

/**
 * The bridge every real node's pods attach to; its address is the node address and the
 * apiserver's advertised address. Its alias names the cluster directory that owns it, so a
 * second cluster on the machine is refused rather than sharing (and later tearing down) it.
 */
export async function ensureBridge(owner: string): Promise<void> {
  await assertBridgeFree(owner);
  if (await bridgeOwner() === undefined) {
    await run("ip", ["link", "add", BRIDGE, "type", "bridge"]);
    await run("ip", ["link", "set", BRIDGE, "alias", owner]);
  }
  const prefix = POD_NETWORK.split("/")[1];
  if (!(await run("ip", ["-o", "addr", "show", "dev", BRIDGE])).includes(`${BRIDGE_IP}/`)) {
    await run("ip", ["addr", "add", `${BRIDGE_IP}/${prefix}`, "dev", BRIDGE]);
  }
  await run("ip", ["link", "set", BRIDGE, "up"]);
}

/**
 * Firewall rules of our own chains: what comes from the bridge may not be forwarded to another
 * interface (pods never reach the machine's network), and the apiserver (which real nodes make
 * listen on every address, so that pods reach it on the bridge) answers only on loopback and the
 * bridge.
 */
export async function ensureFirewall(apiserverPort: number): Promise<void> {
  await removeFirewall();
  await run("iptables", ["-N", FORWARD_CHAIN]);
  await run("iptables", ["-A", FORWARD_CHAIN, "-i", BRIDGE, "!", "-o", BRIDGE, "-j", "DROP"]);
  await run("iptables", ["-I", "FORWARD", "1", "-j", FORWARD_CHAIN]);
  await run("iptables", ["-N", INPUT_CHAIN]);
  await run("iptables", ["-A", INPUT_CHAIN, "-i", "lo", "-j", "RETURN"]);
  await run("iptables", ["-A", INPUT_CHAIN, "-i", BRIDGE, "-j", "RETURN"]);
  await run("iptables", [
    "-A",
    INPUT_CHAIN,
    "-p",
    "tcp",
    "--dport",
    `${apiserverPort}`,
    "-j",
    "DROP",
  ]);
  await run("iptables", ["-I", "INPUT", "1", "-j", INPUT_CHAIN]);
}

async function removeFirewall(): Promise<void> {
  for (const [builtin, chain] of [["FORWARD", FORWARD_CHAIN], ["INPUT", INPUT_CHAIN]]) {
    while (await attempt("iptables", ["-D", builtin, "-j", chain]));
    await attempt("iptables", ["-F", chain]);
    await attempt("iptables", ["-X", chain]);
  }
}

/** Families and tables where the kubelet, kube-proxy and the CNI plugins add chains. */
const FIREWALLS = ["iptables", "ip6tables"].flatMap((cmd) =>
  ["filter", "nat", "mangle"].map((table) => ({ cmd, table }))
);
/** The kubelet's and kube-proxy's chains (KUBE-FIREWALL, KUBE-SERVICES, ...), portmap's CNI-*. */
const NODE_CHAIN = /^(KUBE|CNI)-/;

/** `-N` lines of chains the nodes' daemons create, per family and table. */
async function foreignChains(): Promise<{ cmd: string; table: string; chain: string }[]> {
  const found = [];
  for (const { cmd, table } of FIREWALLS) {
    const rules = await run(cmd, ["-t", table, "-S"]).catch(() => "");
    for (const m of rules.matchAll(/^-N (\S+)$/gm)) {
      if (NODE_CHAIN.test(m[1])) found.push({ cmd, table, chain: m[1] });
    }
  }
  return found;
}

/**
 * Removes what `kube-proxy --cleanup` leaves: the kubelet's chains (KUBE-FIREWALL drops
 * connections to loopback from other addresses), canaries, and portmap's chains. First every
 * rule that jumps into one of them, then the chains.
 */
async function removeNodeChains(): Promise<void> {
  const chains = await foreignChains();
  for (const { cmd, table } of FIREWALLS) {
    const rules = await run(cmd, ["-t", table, "-S"]).catch(() => "");
    for (const line of rules.split("\n")) {
      const m = line.match(/^-A (\S+) (.*-j (?:KUBE|CNI)-\S+.*)$/);
      // Rules are printed quoted for a shell (comments with spaces).
      if (m) await attempt("sh", ["-c", `${cmd} -t ${table} -D ${m[1]} ${m[2]}`]);
    }
  }
  for (const { cmd, table, chain } of chains) await attempt(cmd, ["-t", table, "-F", chain]);
  for (const { cmd, table, chain } of chains) await attempt(cmd, ["-t", table, "-X", chain]);
}

/** Mount points at or below `dir`, deepest first (mountinfo escapes spaces as \040). */
export function mountsUnder(mountinfo: string, dir: string): string[] {
  const unescape = (s: string) =>
    s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
  const points = mountinfo.split("\n").filter((l) => l).map((l) => unescape(l.split(" ")[4]));
  return [...new Set(points.filter((p) => p === dir || p.startsWith(`${dir}/`)))]
    .sort((a, b) => b.split("/").length - a.split("/").length || b.length - a.length);
}

export async function unmountUnder(dir: string): Promise<number> {
  let count = 0;
  // A lazily detached parent can reveal nothing new, but a busy one may need a second pass.
  for (let pass = 0; pass < 3; pass++) {
    const points = mountsUnder(await Deno.readTextFile("/proc/self/mountinfo"), dir);
    if (points.length === 0) break;
    for (const p of points) {
      if (await attempt("umount", [p]) || await attempt("umount", ["-l", p])) count++;
    }
  }
  return count;
}

/** Mount points of the cgroup hierarchies (cgroup v1 controllers and the unified one). */
async function cgroupMounts(): Promise<string[]> {
  const mountinfo = await Deno.readTextFile("/proc/self/mountinfo");
  return mountinfo.split("\n").flatMap((line) => {
    const [before, after] = line.split(" - ");
    return after && /^cgroup2? /.test(after) ? [before.split(" ")[4]] : [];
  });
}

/** Every hierarchy's directory for `root` that exists. */
async function cgroupDirs(root: string): Promise<string[]> {
  const dirs: string[] = [];
  for (const mount of await cgroupMounts()) {
    if (await exists(`${mount}${root}`)) dirs.push(`${mount}${root}`);
  }
  return dirs;
}

/**
 * Creates `root` in every hierarchy: the kubelet refuses a cgroupRoot that does not exist. A new
 * cgroup v1 cpuset has no CPUs or memory nodes (no task could join it): it gets its parent's.
 */
export async function createCgroupRoot(root: string): Promise<void> {
  for (const mount of await cgroupMounts()) {
    const dir = `${mount}${root}`;
    await Deno.mkdir(dir, { recursive: true });
    for (const file of ["cpuset.cpus", "cpuset.mems"]) {
      const parent = await Deno.readTextFile(`${mount}/${file}`).catch(() => undefined);
      const own = await Deno.readTextFile(`${dir}/${file}`).catch(() => undefined);
      if (parent !== undefined && own?.trim() === "") {
        await Deno.writeTextFile(`${dir}/${file}`, parent);
      }
    }
  }
}

async function cgroupTree(dir: string): Promise<string[]> {
  const out = [dir];
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory) out.push(...await cgroupTree(`${dir}/${e.name}`));
  }
  return out;
}

/** SIGKILLs every process in the cgroups below `root`, then removes them (deepest first). */
export async function removeCgroups(root: string): Promise<number> {
  let killed = 0;
  const dirs = await cgroupDirs(root);
  for (let pass = 0; pass < 50; pass++) {
    let alive = 0;
    for (const dir of dirs) {
      for (const cg of await cgroupTree(dir).catch(() => [])) {
        const procs = await Deno.readTextFile(`${cg}/cgroup.procs`).catch(() => "");
        for (const pid of procs.split("\n").filter((p) => p)) {
          alive++;
          try {
            Deno.kill(Number(pid), "SIGKILL");
            killed++;
          } catch {
            // Gone already.
          }
        }
      }
    }
    if (alive === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const dir of dirs) {
    const tree = (await cgroupTree(dir).catch(() => [])).sort((a, b) => b.length - a.length);
    for (const cg of tree) await Deno.remove(cg).catch(() => {});
  }
  return killed;
}

/** The cluster directory named by the bridge's alias; "" for a bridge without one. */
export async function bridgeOwner(): Promise<string | undefined> {
  const link = await run("ip", ["-d", "-o", "link", "show", BRIDGE]).catch(() => "");
  return link ? (link.match(/alias (\S+)/)?.[1] ?? "") : undefined;
}

/**
 * Puts the machine back as `record` found it (the bridge, rules, sysctl, host paths), unless the
 * bridge now belongs to another cluster directory than `owner`.
 */
export async function restoreHost(owner: string, record: HostRecord): Promise<void> {
  const bridge = await bridgeOwner();
  if (bridge !== undefined && bridge !== owner) return;
  await removeFirewall();
  if (bridge !== undefined) await attempt("ip", ["link", "del", BRIDGE]);
  if (!record.chainsExisted) await removeNodeChains();
  await Deno.writeTextFile(IP_FORWARD, record.ipForward).catch(() => {});
  for (const p of record.absentPaths) await Deno.remove(p, { recursive: true }).catch(() => {});
}
