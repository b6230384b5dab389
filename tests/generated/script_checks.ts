/**
 * Checks of the scripts in an entrypoint ConfigMap as bash sees them: syntax (`bash -n`),
 * shellcheck, and a run of the parts that do not need Flux in a sandbox directory with stub
 * commands (flux, hostname, cp, chmod, chown, sleep record their arguments and do nothing), so
 * that an operator-derived value holding `$(touch pwned-…)` would leave a file behind if it ever
 * escaped its quoting.
 */
import { join } from "node:path";
import { shellQuote } from "../../controllers/minicluster/children/scripts/parts/shell.ts";
import { VIEW_SOURCE_ROOT } from "../../controllers/minicluster/children/scripts/parts/settings.ts";
import { DEFAULT_MOUNT_PATH } from "../../controllers/minicluster/children/scripts/parts/settings.ts";
import { CURVE_CERT_SOURCE } from "../../controllers/minicluster/children/scripts/parts/paths.ts";
import { CUSTOM_SCRIPT_PATH } from "../../controllers/minicluster/children/scripts/custom-script.ts";

/** The wait scripts' line naming the mounted certificate, moved into a sandbox by replacing it. */
export function relocateCurveCert(script: string, path: string): string {
  return script.replaceAll(
    `curvesource=${CURVE_CERT_SOURCE}\n`,
    `curvesource=${shellQuote(path)}\n`,
  );
}

/**
 * The scripts with `commands.script`'s file moved to `path`: in the shared /tmp, runs at the same
 * time (test files in parallel, two checkouts' suites) would write and run each other's file. The
 * path replaces the constant wherever it stands, quoted or not, so it must need no quoting itself
 * (as a temporary directory's does not).
 */
export function relocateCustomScript(script: string, path: string): string {
  if (!/^[\w/.-]+$/.test(path)) throw new Error(`a path that needs quoting: ${path}`);
  return script.replaceAll(CUSTOM_SCRIPT_PATH, path);
}

/**
 * The script with the lead broker's staging file for R (`/tmp/R`, the pod's own /tmp) moved to
 * `path`, so that sandboxes running at once on one host never share it.
 */
export function relocateResourceSet(script: string, path: string): string {
  if (!/^[\w/.-]+$/.test(path)) throw new Error(`a path that needs quoting: ${path}`);
  return script.replace(/\/tmp\/R(?![\w.-])/g, path);
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function run(
  cmd: string,
  args: string[],
  opts: { stdin?: string; env?: Record<string, string>; cwd?: string; clearEnv?: boolean } = {},
): Promise<RunResult> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: opts.env,
    clearEnv: opts.clearEnv,
    cwd: opts.cwd,
  }).spawn();
  if (opts.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(opts.stdin));
    await writer.close();
  }
  const out = await child.output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

/** Problems `bash -n` and shellcheck (at `severity` and above) find in one script. */
export async function scriptProblems(
  label: string,
  script: string,
  severity = "warning",
): Promise<string[]> {
  const problems: string[] = [];
  const syntax = await run("bash", ["-n"], { stdin: script });
  if (syntax.code !== 0) problems.push(`${label}: bash -n: ${syntax.stderr.trim()}`);
  const lint = await run("shellcheck", ["-s", "bash", "-S", severity, "-f", "gcc", "-"], {
    stdin: script,
  });
  if (lint.code !== 0) {
    problems.push(`${label}: shellcheck:\n${(lint.stdout + lint.stderr).trim().slice(0, 2000)}`);
  }
  return problems;
}

/** Runs `fn` over `items` with at most `limit` at a time. */
export async function pool<T, R>(
  items: T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  }));
  return out;
}

const STUBBED = ["flux", "cp", "chmod", "chown", "sleep"];

async function stubs(root: string): Promise<string> {
  const bin = join(root, "bin");
  await Deno.mkdir(bin, { recursive: true });
  for (const name of STUBBED) {
    await Deno.writeTextFile(
      join(bin, name),
      `#!/bin/bash\n{ printf '%s\\0' ${name} "$@"; printf '\\n'; } >> "$STUB_LOG"\n` +
        (name === "flux" ? `if [ "$1" = R ]; then echo '{"version": 1}'; fi\n` : ""),
      { mode: 0o755 },
    );
  }
  await Deno.writeTextFile(
    join(bin, "hostname"),
    `#!/bin/bash\nprintf '%s\\n' "$STUB_HOSTNAME"\n`,
    {
      mode: 0o755,
    },
  );
  return bin;
}

/** Every file under `dir` whose name starts with "pwned". */
export async function pwnedFiles(
  dir: string,
  opts: { recursive?: boolean } = {},
): Promise<string[]> {
  const found: string[] = [];
  const walk = async (d: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(d));
    } catch {
      return;
    }
    for (const e of entries) {
      const path = join(d, e.name);
      if (e.name.startsWith("pwned")) found.push(path);
      if (e.isDirectory && opts.recursive !== false) await walk(path);
    }
  };
  await walk(dir);
  return found;
}

/**
 * Runs the scripts of one MiniCluster in a fresh sandbox: the init script (its view copy finds
 * nothing), then every wait script as the lead broker and as a follower, then every start script.
 * The view mount path, the view source and the mounted CURVE certificate are moved into the
 * sandbox by replacing the one line that sets each (operator constants or the quoted spec value,
 * not the values under test), and `commands.script`'s file and R's staging file by their paths.
 * Returns the problems: a script that failed, or a `pwned-*` file anywhere in the sandbox, its
 * working directory or `extraDirs`.
 */
export async function runInSandbox(
  label: string,
  data: Record<string, string>,
  opts: { name: string; mountPath?: string; viewName?: string; extraDirs?: string[] },
): Promise<string[]> {
  const root = await Deno.makeTempDir({ prefix: "mc-bad-input-" });
  const problems: string[] = [];
  try {
    const bin = await stubs(root);
    const mountPath = opts.mountPath || DEFAULT_MOUNT_PATH;
    const view = join(root, "view");
    const cert = join(root, "curve.cert");
    await Deno.writeTextFile(cert, "", { mode: 0o400 });
    const relocate = (script: string) =>
      relocateResourceSet(
        relocateCustomScript(relocateCurveCert(script, cert), join(root, "custom-entrypoint.sh")),
        join(root, "R"),
      )
        .replaceAll(`viewbase=${shellQuote(mountPath)}\n`, `viewbase=${shellQuote(view)}\n`)
        .replaceAll(`viewroot=${shellQuote(mountPath)}\n`, `viewroot=${shellQuote(view)}\n`)
        .replaceAll(
          `fluxroot=${VIEW_SOURCE_ROOT}\n`,
          `fluxroot=${shellQuote(join(root, "opt"))}\n`,
        );
    const env = {
      PATH: `${bin}:/usr/bin:/bin`,
      HOME: root,
      STUB_LOG: join(root, "calls"),
      STUB_HOSTNAME: `${opts.name}-0`,
    };
    const exec = async (key: string, hostname: string) => {
      const file = join(root, `${key}.sh`);
      await Deno.writeTextFile(file, relocate(data[key]));
      // A script that loops (waiting for a file that never comes) is cut off and reported.
      const r = await run("timeout", ["20", "bash", file], {
        cwd: root,
        env: { ...env, STUB_HOSTNAME: hostname },
        clearEnv: true,
      });
      if (r.code !== 0) {
        problems.push(`${label}/${key} as ${hostname} exited ${r.code}: ${r.stderr.slice(-1000)}`);
      }
    };
    await Deno.mkdir(view, { recursive: true });
    await exec(opts.viewName ?? "flux-view", "init");
    // The start scripts wait for the broker's socket.
    await Deno.mkdir(join(view, "config", "run", "flux"), { recursive: true });
    await Deno.writeTextFile(join(view, "config", "run", "flux", "local"), "");
    for (const key of Object.keys(data).filter((k) => k.startsWith("wait-")).sort()) {
      await exec(key, `${opts.name}-0`);
      await exec(key, `${opts.name}-1`);
    }
    for (const key of Object.keys(data).filter((k) => k.startsWith("start-")).sort()) {
      await exec(key, `${opts.name}-0`);
    }
    for (const dir of [root, ...(opts.extraDirs ?? [])]) {
      const found = await pwnedFiles(dir);
      if (found.length > 0) problems.push(`${label}: injected commands ran: ${found.join(", ")}`);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
  return problems;
}
