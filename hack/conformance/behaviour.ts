/**
 * What the generated scripts do, compared by running them: each side's Job is turned into pods
 * (index 0, the lead broker, and index 1, a follower, when there are two or more), and the
 * services pod when there is one; every container's command runs in a sandbox (sandbox.sh) with the
 * pod's volumes filled from the side's own ConfigMaps and Secrets, a stand-in view image for the
 * init container, and a recording `flux` (flux.sh). Compared: each container's exit code, the
 * `flux` commands it ran, and the files it left in the pod's volumes and in its own filesystem
 * (broker.toml as TOML, the CURVE certificate without key material, flux-view.sh by the environment
 * it gives when sourced).
 */
import { join } from "node:path";
import type { Context, Difference } from "./compare.ts";
import { NAMESPACE, normaliseCertificate, sortKeys } from "./compare.ts";
import {
  type Container,
  fakeViewImage,
  fillVolume,
  type Obj,
  podsOf,
  type PodSpec,
  run,
  toolsDir,
} from "./pod_files.ts";

/** One simulated pod of one side. */
interface PodRun {
  containers: Record<string, { exit: number; flux: string[][]; output: string }>;
  files: Record<string, string>;
}

const HERE = new URL(".", import.meta.url).pathname;
const SANDBOX = join(HERE, "sandbox.sh");
const FLUX_STUB = join(HERE, "flux.sh");
/** Seconds a container may run; a sidecar that never ends is cut off (the same on both sides). */
const CONTAINER_TIMEOUT = 30;
const PATH = "/mc-bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Generated scripts that run in the sandbox, so that what they do is compared, not their text. */
const SCRIPTS_RUN = ["flux-job.batch", "flux-connect.sh"];
/** Directories of a container root that are the machine's or the sandbox's, not the container's. */
const INFRA = new Set([
  "usr",
  "etc",
  "proc",
  "dev",
  "bin",
  "sbin",
  "lib",
  "lib64",
  "mc-bin",
  "mc-record",
]);

/** Runs one container in its own root, the pod's volumes mounted. */
async function runContainer(
  work: string,
  pod: { hostname: string; volumes: Map<string, string> },
  container: Container,
  opts: { image: "view" | "app"; command?: string[]; name?: string },
): Promise<{ exit: number; flux: string[][]; output: string; root: string; mounts: string[] }> {
  const label = opts.name ?? (container.name + (opts.command ? "-probe" : ""));
  const root = join(work, "roots", label);
  await Deno.mkdir(join(root, "mc-bin"), { recursive: true });
  await Deno.mkdir(join(root, "mc-record"), { recursive: true });
  await Deno.copyFile(FLUX_STUB, join(root, "mc-bin/flux"));
  await Deno.chmod(join(root, "mc-bin/flux"), 0o755);
  // Waits are cut short (a script's retry loop or a user's `sleep 200` means the same whichever
  // operator wrote it), so a pod plays out in seconds.
  await Deno.writeTextFile(join(root, "mc-bin/sleep"), "#!/bin/bash\nexec /usr/bin/sleep 0.1\n", {
    mode: 0o755,
  });
  // The Go operator's sidecars wait with this helper of its images; it returns at once here.
  await Deno.writeTextFile(join(root, "mc-bin/goshare-wait-fs"), "#!/bin/bash\nexit 0\n", {
    mode: 0o755,
  });
  if (opts.image === "view") await fakeViewImage(root);

  const mounts: string[] = [];
  const lines: string[] = [];
  for (const m of container.volumeMounts ?? []) {
    const dir = pod.volumes.get(m.name);
    if (!dir) continue;
    let source = dir;
    if (m.subPath) {
      source = join(dir, m.subPath);
      try {
        await Deno.lstat(source);
      } catch {
        await Deno.writeTextFile(source, "");
      }
    }
    lines.push(`${source}\t${m.mountPath.replace(/\/+$/, "") || "/"}\t${m.readOnly ? "ro" : "rw"}`);
    mounts.push(m.mountPath.replace(/\/+$/, ""));
  }
  const mountsFile = join(work, `${label}.mounts`);
  await Deno.writeTextFile(mountsFile, lines.join("\n") + "\n");
  const env = [
    `PATH=${PATH}`,
    "HOME=/root",
    `HOSTNAME=${pod.hostname}`,
    "MC_RECORD=/mc-record/flux",
    ...(container.env ?? []).map((e) =>
      `${e.name}=${e.value ?? (e.valueFrom ? "<valueFrom>" : "")}`
    ),
  ];
  const envFile = join(work, `${label}.env`);
  await Deno.writeTextFile(envFile, env.map((e) => `${e}\0`).join(""));
  const argv = opts.command ?? [...(container.command ?? []), ...(container.args ?? [])];
  const started = performance.now();
  const result = await run("timeout", [
    "--kill-after=3",
    String(CONTAINER_TIMEOUT),
    "bash",
    SANDBOX,
    root,
    await toolsDir(),
    pod.hostname,
    container.workingDir || "/",
    mountsFile,
    envFile,
    "--",
    ...argv,
  ]);
  if (Deno.env.get("MC_CONFORMANCE_TIMING")) {
    console.error(
      `  ${label} ${pod.hostname}: ${((performance.now() - started) / 1000).toFixed(2)} s`,
    );
  }
  let calls: string[][] = [];
  try {
    const text = await Deno.readTextFile(join(root, "mc-record/flux"));
    calls = text.split("\n").filter((l) => l !== "").map((l) => l.split("\0").slice(0, -1));
  } catch {
    // never called
  }
  return { exit: result.code, flux: calls, output: result.out.slice(-2000), root, mounts };
}

interface FileEntry {
  path: string;
  full: string;
  info: Deno.FileInfo;
}

async function walk(
  dir: string,
  prefix: string,
  skip: (rel: string) => boolean,
): Promise<FileEntry[]> {
  const out: FileEntry[] = [];
  const visit = async (rel: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(join(dir, rel)));
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => a.name < b.name ? -1 : 1)) {
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      if (skip(childRel)) continue;
      const full = join(dir, childRel);
      const info = await Deno.lstat(full);
      out.push({ path: `${prefix}/${childRel}`, full, info });
      if (info.isDirectory) await visit(childRel);
    }
  };
  await visit("");
  return out;
}

async function describe(entry: FileEntry): Promise<string> {
  const { info, full, path } = entry;
  if (info.isSymlink) return `symlink -> ${await Deno.readLink(full)}`;
  if (info.isDirectory) return "directory";
  const mode = ((info.mode ?? 0) & 0o777).toString(8);
  const bytes = await Deno.readFile(full);
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  let content = text;
  if (SCRIPTS_RUN.some((name) => path.endsWith(`/${name}`))) {
    content = "<script: compared by the commands it runs>";
  } else if (path.endsWith("/broker.toml")) content = await tomlAsJson(full);
  else if (/^\s*secret-key\s*=/m.test(text)) content = normaliseCertificate(text);
  return `file ${mode}\n${content}`;
}

/** broker.toml as Flux reads it: parsed (Python's tomllib), or the parser's complaint. */
async function tomlAsJson(path: string): Promise<string> {
  const r = await run("/usr/bin/python3", [
    "-c",
    "import json,sys,tomllib\ntry:\n  print(json.dumps(tomllib.load(open(sys.argv[1],'rb')),sort_keys=True,indent=1))\nexcept Exception as e:\n  print('invalid TOML:', e)",
    path,
  ]);
  return r.out.trim();
}

/** Simulates one pod; returns what its containers did and left behind. */
async function simulatePod(
  work: string,
  plan: { role: string; hostname: string; spec: PodSpec },
  objects: Obj[],
): Promise<PodRun> {
  const volumes = new Map<string, string>();
  for (const volume of plan.spec.volumes ?? []) {
    const dir = join(work, "volumes", volume.name);
    await fillVolume(dir, volume, objects);
    volumes.set(volume.name, dir);
  }
  const pod = { hostname: plan.hostname, volumes };
  const runs: PodRun["containers"] = {};
  const roots: { name: string; root: string; mounts: string[]; image: string }[] = [];
  for (const c of plan.spec.initContainers ?? []) {
    const r = await runContainer(work, pod, c, { image: "view" });
    runs[c.name] = { exit: r.exit, flux: r.flux, output: r.output };
    roots.push({ name: c.name, root: r.root, mounts: r.mounts, image: "view" });
  }
  const results = await Promise.all(
    plan.spec.containers.map((c) => runContainer(work, pod, c, { image: "app" })),
  );
  plan.spec.containers.forEach((c, i) => {
    const r = results[i];
    runs[c.name] = { exit: r.exit, flux: r.flux, output: r.output };
    roots.push({ name: c.name, root: r.root, mounts: r.mounts, image: "app" });
  });

  const files: Record<string, string> = {};
  // Volumes, by where the first container (the Flux one, for Job pods) mounts them.
  const mountedAt = new Map<string, string>();
  for (const c of [...plan.spec.containers, ...(plan.spec.initContainers ?? [])]) {
    for (const m of c.volumeMounts ?? []) {
      if (!mountedAt.has(m.name) && !m.subPath) {
        mountedAt.set(m.name, m.mountPath.replace(/\/+$/, ""));
      }
    }
  }
  for (const [name, dir] of volumes) {
    const volume = plan.spec.volumes!.find((v) => v.name === name)!;
    if (volume.configMap || volume.secret || volume.projected) continue; // read-only inputs
    const prefix = mountedAt.get(name) ?? `<volume ${name}>`;
    for (const e of await walk(dir, prefix, () => false)) files[e.path] = await describe(e);
  }
  // What each container left in its own filesystem (not the view image it started with).
  for (const r of roots) {
    const skip = (rel: string) =>
      INFRA.has(rel.split("/")[0]) || r.mounts.some((m) =>
        `/${rel}` === m || m.startsWith(`/${rel}/`)
      ) ||
      (r.image === "view" && rel.split("/")[0] === "opt");
    for (const e of await walk(r.root, `${r.name}:`, skip)) {
      if (
        e.info.isDirectory &&
        r.mounts.some((m) => m.startsWith(e.path.slice(r.name.length + 1) + "/"))
      ) continue;
      files[e.path] = await describe(e);
    }
  }
  // The helper files by what they do, in one more run of the Flux container: flux-view.sh by the
  // environment sourcing it gives (written to /mc-record/view-env), flux-connect.sh by the flux
  // commands it runs (a shell on the broker: `flux proxy`).
  const view = Object.keys(files).find((p) => p.endsWith("/flux-view.sh") && !p.includes(":"));
  const connect = Object.keys(files).find((p) =>
    p.endsWith("/flux-connect.sh") && !p.includes(":")
  );
  if (view || connect) {
    const probe = await runContainer(work, pod, plan.spec.containers[0], {
      image: "app",
      name: "probe",
      command: [
        "/bin/bash",
        "-c",
        [
          `if [ -n "$1" ]; then (. "$1" >/dev/null 2>&1; env -0 | sort -z > /mc-record/view-env); fi`,
          `if [ -n "$2" ]; then bash "$2" </dev/null >/dev/null 2>&1; fi`,
        ].join("\n"),
        "probe",
        view ?? "",
        connect ?? "",
      ],
    });
    if (view) {
      const env = await Deno.readTextFile(join(probe.root, "mc-record/view-env")).catch(() => "");
      files[`${view} (sourced)`] = env.split("\0")
        .filter((l) => l && !/^(PWD|SHLVL|_|OLDPWD)=/.test(l)).join("\n");
    }
    if (connect) files[`${connect} (run)`] = JSON.stringify(probe.flux);
  }
  return { containers: runs, files };
}

/** The run with the side's namespace replaced (it differs by construction). */
function withoutNamespace(run: PodRun, namespace: string): PodRun {
  const pattern = new RegExp(`(?<![a-z0-9-])${namespace}(?![a-z0-9-])`, "g");
  return JSON.parse(JSON.stringify(run).replace(pattern, NAMESPACE));
}

export async function compareBehaviour(
  ctx: Context,
  go: unknown[],
  ours: unknown[],
  log: (m: string) => void,
): Promise<Difference[]> {
  const goPods = podsOf(go as Obj[], ctx.name);
  const oursPods = podsOf(ours as Obj[], ctx.name);
  const work = await Deno.makeTempDir({ prefix: "mc-conformance-pod-" });
  const t0 = performance.now();
  try {
    const out: Difference[] = [];
    const roles = [...new Set([...goPods, ...oursPods].map((p) => p.role))];
    // Every pod of both sides at once, as a cluster would run them (each has its own volumes).
    const compared = await Promise.all(roles.map(async (role) => {
      const g = goPods.find((p) => p.role === role);
      const o = oursPods.find((p) => p.role === role);
      if (!g || !o) return []; // an object only one side made: reported by compareChildren
      const [goRun, oursRun] = await Promise.all([
        simulatePod(join(work, "go", role), g, go as Obj[]),
        simulatePod(join(work, "ours", role), o, ours as Obj[]),
      ]);
      return diffRuns(
        ctx,
        role,
        withoutNamespace(goRun, ctx.goNamespace),
        withoutNamespace(oursRun, ctx.oursNamespace),
      );
    }));
    for (const found of compared) out.push(...found);
    if (Deno.env.get("MC_CONFORMANCE_TIMING")) {
      log(`${ctx.manifest}: pods simulated in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    return out;
  } catch (e) {
    log(`${ctx.manifest}: behaviour not compared: ${e}`);
    throw e;
  } finally {
    if (Deno.env.get("MC_CONFORMANCE_KEEP")) log(`${ctx.manifest}: pods kept in ${work}`);
    else await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

function diffRuns(ctx: Context, role: string, go: PodRun, ours: PodRun): Difference[] {
  const out: Difference[] = [];
  const push = (path: string, g: unknown, o: unknown) => {
    if (JSON.stringify(sortKeys(g)) === JSON.stringify(sortKeys(o))) return;
    out.push({
      manifest: ctx.manifest,
      kind: "behaviour",
      object: `pod ${role}`,
      path,
      go: g,
      ours: o,
    });
  };
  const names = [...new Set([...Object.keys(go.containers), ...Object.keys(ours.containers)])];
  // What a broker found in its environment (the stand-in records it as an "@env" call) is
  // compared on its own, so that it does not hide or join other differences of the commands.
  const commands = (calls: string[][] | undefined) => calls?.filter((c) => c[0] !== "@env");
  const environment = (calls: string[][] | undefined) =>
    calls?.filter((c) => c[0] === "@env").map((c) => c[1]);
  for (const name of names) {
    const g = go.containers[name];
    const o = ours.containers[name];
    push(`containers.${name}.exit`, g?.exit, o?.exit);
    push(`containers.${name}.flux`, commands(g?.flux), commands(o?.flux));
    push(`containers.${name}.brokerEnvironment`, environment(g?.flux), environment(o?.flux));
  }
  const paths = [...new Set([...Object.keys(go.files), ...Object.keys(ours.files)])].sort();
  for (const path of paths) push(`files.${path}`, go.files[path], ours.files[path]);
  return out;
}
