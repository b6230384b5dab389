/**
 * The pods a side's children make, as the conformance sandbox needs them: their specs by role, their
 * volumes filled with the files Kubernetes would project from the side's own ConfigMaps and
 * Secrets, a stand-in for the Flux view image, and the directory of basic tools the sandbox puts on
 * each container's PATH.
 */
import { join } from "node:path";

export type Obj = Record<string, unknown>;

export interface Container {
  name: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  volumeMounts?: { name: string; mountPath: string; subPath?: string; readOnly?: boolean }[];
}

interface Volume {
  name: string;
  emptyDir?: unknown;
  configMap?: { name: string; items?: KeyPath[]; defaultMode?: number };
  secret?: { secretName: string; items?: KeyPath[]; defaultMode?: number };
  projected?: {
    sources: {
      configMap?: { name: string; items?: KeyPath[] };
      secret?: { name: string; items?: KeyPath[] };
    }[];
    defaultMode?: number;
  };
}

interface KeyPath {
  key: string;
  path: string;
  mode?: number;
}

export interface PodSpec {
  hostname?: string;
  initContainers?: Container[];
  containers: Container[];
  volumes?: Volume[];
}

/** The pods a side's children make, by role. */
export function podsOf(
  objects: Obj[],
  name: string,
): { role: string; hostname: string; spec: PodSpec }[] {
  const out: { role: string; hostname: string; spec: PodSpec }[] = [];
  const job = objects.find((o) => o.kind === "Job" && (o.metadata as Obj)?.name === name) as
    | { spec: { parallelism?: number; template: { spec: PodSpec } } }
    | undefined;
  if (job) {
    const size = job.spec.parallelism ?? 1;
    for (const index of size > 1 ? [0, 1] : [0]) {
      out.push({
        role: `${name}-${index}`,
        hostname: `${name}-${index}`,
        spec: job.spec.template.spec,
      });
    }
  }
  const services = objects.find((o) =>
    o.kind === "Pod" && (o.metadata as Obj)?.name === `${name}-services`
  ) as
    | { spec: PodSpec }
    | undefined;
  if (services) {
    out.push({
      role: `${name}-services`,
      hostname: services.spec.hostname ?? `${name}-services`,
      spec: services.spec,
    });
  }
  return out;
}

function decodeBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** The files a ConfigMap or Secret volume source projects: path to content and mode. */
function projectedFiles(
  objects: Obj[],
  kind: "ConfigMap" | "Secret",
  name: string,
  items: KeyPath[] | undefined,
  defaultMode: number,
): { path: string; data: Uint8Array; mode: number }[] {
  const obj = objects.find((o) => o.kind === kind && (o.metadata as Obj)?.name === name);
  if (!obj) return [];
  const data: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries((obj.data ?? {}) as Record<string, string>)) {
    data[k] = kind === "Secret" ? decodeBase64(v) : new TextEncoder().encode(v);
  }
  const chosen: KeyPath[] = items ?? Object.keys(data).map((key) => ({ key, path: key }));
  return chosen.filter((i) => data[i.key] !== undefined).map((i) => ({
    path: i.path,
    data: data[i.key],
    mode: i.mode ?? defaultMode,
  }));
}

export async function fillVolume(dir: string, volume: Volume, objects: Obj[]): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  const files: { path: string; data: Uint8Array; mode: number }[] = [];
  if (volume.configMap) {
    const c = volume.configMap;
    files.push(...projectedFiles(objects, "ConfigMap", c.name, c.items, c.defaultMode ?? 0o644));
  }
  if (volume.secret) {
    const s = volume.secret;
    files.push(...projectedFiles(objects, "Secret", s.secretName, s.items, s.defaultMode ?? 0o644));
  }
  for (const source of volume.projected?.sources ?? []) {
    const mode = volume.projected?.defaultMode ?? 0o644;
    if (source.configMap) {
      files.push(
        ...projectedFiles(
          objects,
          "ConfigMap",
          source.configMap.name,
          source.configMap.items,
          mode,
        ),
      );
    }
    if (source.secret) {
      files.push(
        ...projectedFiles(objects, "Secret", source.secret.name, source.secret.items, mode),
      );
    }
  }
  // Anything else (emptyDir, hostPath, PVC, CSI) starts empty: never the machine's own paths.
  for (const f of files) {
    const path = join(dir, f.path);
    await Deno.mkdir(join(path, ".."), { recursive: true });
    await Deno.writeFile(path, f.data, { mode: f.mode });
    await Deno.chmod(path, f.mode);
  }
}

/** A flux-view image as the init container sees it: a spack view and its software. */
export async function fakeViewImage(root: string): Promise<void> {
  const view = join(root, "opt/views/._view/mcview0");
  for (
    const dir of ["bin", "lib/python3.11/site-packages/flux", "etc/flux/rc1.d", "libexec/flux"]
  ) {
    await Deno.mkdir(join(view, dir), { recursive: true });
  }
  await Deno.writeTextFile(join(view, "lib/python3.11/site-packages/flux/__init__.py"), "");
  await Deno.writeTextFile(join(view, "etc/flux/rc1.d/01-sched-fluxion"), "#!/bin/sh\n");
  await Deno.writeTextFile(join(view, "bin/flux-version"), "0.88.0\n");
  await Deno.symlink("/opt/views/._view/mcview0", join(root, "opt/view"));
  await Deno.mkdir(join(root, "opt/software/flux-core-0.88.0/bin"), { recursive: true });
  await Deno.writeTextFile(join(root, "opt/software/flux-core-0.88.0/bin/marker"), "software\n");
}

/**
 * The programs of the sandbox's /usr/bin: a shell and the utilities the scripts of both operators
 * use (and `time`, `hostname`, `id` they call), copied once per run from the machine with the
 * libraries they link (ldd), and nothing else: a small root like an image's, where a user's
 * `pip install` or `dnf update` fails at once the same way for both operators, and a `find .`
 * from / does not walk the machine's /usr.
 */
const TOOLS = [
  "bash",
  "sh",
  "dash",
  "env",
  "cat",
  "cp",
  "mv",
  "rm",
  "rmdir",
  "mkdir",
  "ln",
  "ls",
  "chmod",
  "chown",
  "touch",
  "find",
  "basename",
  "dirname",
  "head",
  "tail",
  "sort",
  "uniq",
  "sed",
  "grep",
  "tr",
  "cut",
  "wc",
  "printf",
  "echo",
  "test",
  "[",
  "true",
  "false",
  "id",
  "whoami",
  "hostname",
  "tee",
  "readlink",
  "realpath",
  "date",
  "uname",
  "stat",
  "xargs",
  "which",
  "time",
  "timeout",
  // The recording flux (flux.sh) locks its record: not a tool the scripts themselves call.
  "flock",
  "seq",
  "expr",
  "mktemp",
  "sleep",
  "awk",
];

let tools: Promise<string> | undefined;

/**
 * The sandbox's /usr for this process: bin/ with TOOLS, lib/ and lib64/ with what they link, at
 * the paths the loader looks for them (made on first use, removed when the process ends).
 */
export function toolsDir(): Promise<string> {
  return tools ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "mc-conformance-usr-" });
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch {
        // already gone
      }
    });
    await Deno.mkdir(join(dir, "bin"));
    const libraries = new Set<string>();
    for (const name of TOOLS) {
      const real = await Deno.realPath(`/usr/bin/${name}`).catch(() => undefined);
      if (!real) continue;
      await Deno.copyFile(real, join(dir, "bin", name));
      await Deno.chmod(join(dir, "bin", name), 0o755);
      const linked = await run("ldd", [real]);
      for (const m of linked.out.matchAll(/(\/\S+\.so[.\d]*)\s+\(0x/g)) libraries.add(m[1]);
    }
    for (const library of libraries) {
      // /lib/x86_64-linux-gnu/libc.so.6 → <dir>/lib/x86_64-linux-gnu/libc.so.6 (/lib is usr/lib).
      const inUsr = library.replace(/^\/usr\//, "/").replace(/^\//, "");
      const target = join(dir, inUsr);
      await Deno.mkdir(join(target, ".."), { recursive: true });
      await Deno.copyFile(await Deno.realPath(library), target);
      await Deno.chmod(target, 0o755);
    }
    return dir;
  })();
}

export async function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command(cmd, { args, stdin: "null", stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { code: out.code, out: text };
}
