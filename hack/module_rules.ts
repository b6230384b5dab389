/**
 * Two rules of the module graph, enforced by `deno task check`:
 *
 * - **No import cycle**, type-only imports and re-exports included. In a cycle the load order
 *   decides which module sees the other's bindings still uninitialised, and two files that need
 *   each other are one concept cut in the wrong place. Dynamic imports (`await import(...)`) are
 *   not edges: they load on demand, after both modules ran.
 * - **`runtime/` knows nothing of MiniClusters**: no name of the operator's domain (minicluster,
 *   flux, curve, broker) in its code or comments. The runtime is a generic controller runtime; what
 *   the operator adds (its flags, kinds, labels, user agent) is handed in from `controllers/` and
 *   `mod.ts`.
 * - **Each folder imports only what its row allows** (hack/folders.ts): the folders show the
 *   design only while an import across them is a decision written down, and `runtime/`'s layers
 *   (core and cache below pacing, the client above them, watch and controller above the client)
 *   hold only while nothing imports upwards.
 *
 *   deno run --allow-read --allow-write --allow-run --allow-env hack/module_rules.ts
 *
 * The graph is Deno's own (`deno info --json` of a root that imports every module checked), so it
 * resolves imports exactly as `deno check` does.
 */

/** Module → the modules it imports statically; paths relative to the repository root. */
export type ModuleGraph = ReadonlyMap<string, readonly string[]>;

import { type Folder, FOLDERS, RULED_ROOTS } from "./folders.ts";

/** A word of the operator's domain in a runtime file. */
export interface ForbiddenName {
  path: string;
  /** 1-based. */
  line: number;
  word: string;
}

/**
 * The words of the operator's domain that `runtime/` must not contain, in any case; WebCrypto's
 * `namedCurve` (an elliptic curve's name) is not Flux's CURVE.
 */
const DOMAIN_WORDS = /minicluster|flux|(?<!named)curve|broker/gi;

/** What the rules check: the same roots `deno task check` type-checks. */
const CHECKED = ["mod.ts", "runtime", "controllers", "api", "tests", "hack", "bench", "testing"];

/** The generic runtime. */
const RUNTIME_DIR = "runtime";

const ROOT = new URL("../", import.meta.url);

/**
 * Every import cycle of `graph`, one per strongly connected component, each as the path that
 * closes it (`[a, b, a]`), starting at its smallest module; sorted.
 */
export function importCycles(graph: ModuleGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component);
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return components.map((c) => closingPath(graph, new Set(c))).sort((a, b) => a[0] < b[0] ? -1 : 1);
}

/** A shortest path from the smallest module of `component` back to itself, inside it. */
function closingPath(graph: ModuleGraph, component: ReadonlySet<string>): string[] {
  const start = [...component].sort()[0];
  const previous = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i];
    for (const w of graph.get(v) ?? []) {
      if (!component.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = previous.get(u)!) path.splice(1, 0, u);
        return [...path, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  throw new Error(`${start} is in no cycle`);
}

/** Each occurrence of a domain word in the given files (meant for the files of `runtime/`). */
export function forbiddenNames(files: readonly { path: string; text: string }[]): ForbiddenName[] {
  const found: ForbiddenName[] = [];
  for (const { path, text } of files) {
    text.split("\n").forEach((line, i) => {
      for (const m of line.matchAll(DOMAIN_WORDS)) found.push({ path, line: i + 1, word: m[0] });
    });
  }
  return found;
}

/** The folder a module is in (`.` for the root's own files). */
function folderOf(module: string): string {
  const slash = module.lastIndexOf("/");
  return slash < 0 ? "." : module.slice(0, slash);
}

/** Is `folder` under one of the ruled roots (so that it needs a row)? */
function isRuled(folder: string): boolean {
  return RULED_ROOTS.some((root) => folder === root || folder.startsWith(`${root}/`));
}

/**
 * Each import of `graph` that leaves a ruled module's folder for a folder (or file) its row does
 * not list, as `from → to`; sorted.
 */
export function forbiddenImports(
  graph: ModuleGraph,
  folders: Readonly<Record<string, Folder>> = FOLDERS,
): string[] {
  const found: string[] = [];
  for (const [from, targets] of graph) {
    const folder = folderOf(from);
    const row = folders[folder];
    if (!row) continue;
    for (const to of targets) {
      if (folderOf(to) === folder || row.imports.includes(folderOf(to))) continue;
      if (row.imports.includes(to)) continue;
      found.push(`${from} → ${to}`);
    }
  }
  return found.sort();
}

/** The folders of `modules` under a ruled root that have no row; sorted. */
export function foldersWithoutRules(
  modules: readonly string[],
  folders: Readonly<Record<string, Folder>> = FOLDERS,
): string[] {
  return [...new Set(modules.map(folderOf))].filter((f) => isRuled(f) && !folders[f]).sort();
}

/**
 * The static import graph of `modules` (paths relative to `root`) and of what they import inside
 * `root`, as `deno info --json` resolves it with `root`'s deno.json.
 */
export async function moduleGraph(root: URL, modules: readonly string[]): Promise<ModuleGraph> {
  const dir = await Deno.makeTempDir({ prefix: "module-rules-" });
  try {
    const entry = `${dir}/all.ts`;
    await Deno.writeTextFile(
      entry,
      modules.map((m) => `import ${JSON.stringify(new URL(m, root).href)};\n`).join(""),
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--config", new URL("deno.json", root).pathname, entry],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`deno info failed: ${new TextDecoder().decode(out.stderr).trim()}`);
    }
    return graphOf(root, JSON.parse(new TextDecoder().decode(out.stdout)));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

interface DenoInfo {
  modules: {
    specifier: string;
    dependencies?: {
      code?: { specifier?: string };
      type?: { specifier?: string };
      isDynamic?: boolean;
    }[];
  }[];
}

function graphOf(root: URL, info: DenoInfo): ModuleGraph {
  const inside = (specifier: string | undefined) =>
    specifier?.startsWith(root.href) ? specifier.slice(root.href.length) : undefined;
  const graph = new Map<string, string[]>();
  for (const module of info.modules) {
    const from = inside(module.specifier);
    if (from === undefined) continue;
    const to = new Set<string>();
    for (const dep of module.dependencies ?? []) {
      if (dep.isDynamic) continue;
      for (const target of [inside(dep.code?.specifier), inside(dep.type?.specifier)]) {
        if (target !== undefined) to.add(target);
      }
    }
    graph.set(from, [...to].sort());
  }
  return graph;
}

/**
 * The .ts files under `path` (a file or a folder relative to `root`, none when it does not exist),
 * relative to `root`.
 */
async function tsFiles(root: URL, path: string): Promise<string[]> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(new URL(path, root));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  if (info.isFile) return path.endsWith(".ts") ? [path] : [];
  const found: string[] = [];
  for await (const entry of Deno.readDir(new URL(`${path}/`, root))) {
    found.push(...await tsFiles(root, `${path}/${entry.name}`));
  }
  return found.sort();
}

/** The rules' findings for the repository at `root`, one message each; empty when it keeps them. */
export async function checkModuleRules(
  root: URL = ROOT,
  folders: Readonly<Record<string, Folder>> = FOLDERS,
): Promise<string[]> {
  const modules = (await Promise.all(CHECKED.map((p) => tsFiles(root, p)))).flat();
  const graph = await moduleGraph(root, modules);
  const cycles = importCycles(graph);
  const runtime = modules.filter((m) => m.startsWith(`${RUNTIME_DIR}/`));
  const names = forbiddenNames(
    await Promise.all(
      runtime.map(async (path) => ({ path, text: await Deno.readTextFile(new URL(path, root)) })),
    ),
  );
  return [
    ...cycles.map((c) => `import cycle: ${c.join(" → ")}`),
    ...names.map((n) =>
      `${n.path}:${n.line}: "${n.word}" in runtime/, which knows nothing of MiniClusters`
    ),
    ...forbiddenImports(graph, folders).map((i) => `import not allowed by hack/folders.ts: ${i}`),
    ...foldersWithoutRules(modules, folders).map((f) =>
      `folder ${f}/ has no row in hack/folders.ts (what it holds, what it may import)`
    ),
  ];
}

if (import.meta.main) {
  const problems = await checkModuleRules();
  for (const p of problems) console.error(p);
  if (problems.length) {
    console.error(`module rules: ${problems.length} problem(s) (see hack/module_rules.ts)`);
    Deno.exit(1);
  }
}
