/**
 * The Go Flux Operator's Python SDK (PyPI `fluxoperator` 0.2.0) as its users install it, for the
 * tests that drive this operator with it: a virtual environment made from
 * tests/python_sdk/requirements.txt (exact versions, sha256 hashes, wheels only, `--no-deps` so
 * that nothing unpinned comes in) by Debian's `python3`. It is a cache entry named by a hash of
 * the requirements and the Python version, so PyPI is asked once, during set-up (`deno task test`
 * makes it before the tests run); later runs, and single test files, reuse it offline.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cachedDir, imageCacheRoot, inputKey } from "../hack/images/cache.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The SDK's pins, and the scripts the tests run with it. */
export const PYTHON_SDK_DIR = join(ROOT, "tests", "python_sdk");
const REQUIREMENTS = join(PYTHON_SDK_DIR, "requirements.txt");

const text = (b: Uint8Array) => new TextDecoder().decode(b);

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdin: "null", stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} exited with ${out.code}:\n${text(out.stderr)}`);
  }
  return text(out.stdout);
}

/**
 * Debian's Python (bookworm: 3.11, the `python3-venv` package gives it `venv`), so that a fresh
 * machine's set-up makes the same environment; another `python3` where Debian's is missing.
 */
function python(): string {
  try {
    Deno.statSync("/usr/bin/python3");
    return "/usr/bin/python3";
  } catch {
    return "python3";
  }
}
/** The pinned wheels are CPython 3.11's. */
const PYTHON_VERSION = /^Python 3\.11\./;

let ready: Promise<string> | undefined;

/** The virtual environment's python, made first when missing (memoized per process). */
export function pythonSdk(): Promise<string> {
  return ready ??= (async () => {
    const base = python();
    const version = (await run(base, ["--version"])).trim();
    if (!PYTHON_VERSION.test(version)) {
      throw new Error(
        `${base} is ${version}: tests/python_sdk/requirements.txt pins 3.11 wheels`,
      );
    }
    const requirements = await Deno.readTextFile(REQUIREMENTS);
    const dir = join(
      dirname(imageCacheRoot()),
      "python-sdk",
      await inputKey({ version, requirements }),
    );
    // The venv's python finds its prefix from its own path, so the entry still works after the
    // rename from the temporary directory it is built in (pip runs as `python -m pip` for that).
    await cachedDir(dir, async (tmp) => {
      await run(base, ["-m", "venv", tmp]).catch((e) => {
        throw new Error(`${e.message}(Debian: apt-get install python3-venv)`);
      });
      await run(join(tmp, "bin", "python"), [
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-cache-dir",
        "--require-hashes",
        "--only-binary=:all:",
        "--no-deps",
        "-r",
        REQUIREMENTS,
      ]);
      await run(join(tmp, "bin", "python"), ["-c", "import fluxoperator.client"]);
    });
    return join(dir, "bin", "python");
  })();
}

export interface SdkRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a script of tests/python_sdk/ with the SDK's python, `KUBECONFIG` set to `kubeconfig` (and
 * HOME to an empty directory, so that nothing of the user's ~/.kube is read). Killed after
 * `timeoutMs`: the SDK's helpers wait without a time limit.
 */
export async function runSdkScript(
  script: string,
  args: string[],
  opts: { kubeconfig: string; timeoutMs: number },
): Promise<SdkRun> {
  const python = await pythonSdk();
  const home = await Deno.makeTempDir({ prefix: "python-sdk-home-" });
  try {
    const out = await new Deno.Command(python, {
      args: ["-u", join(PYTHON_SDK_DIR, script), ...args],
      cwd: PYTHON_SDK_DIR,
      env: { KUBECONFIG: opts.kubeconfig, HOME: home, PYTHONDONTWRITEBYTECODE: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(opts.timeoutMs),
    }).output();
    return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

/** The JSON object a script prints as its last line of stdout. */
export function scriptResult<T>(run: SdkRun): T {
  const last = run.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(last) as T;
  } catch {
    throw new Error(
      `the script exited with ${run.code} and printed no result:\n${run.stdout}\n${run.stderr}`,
    );
  }
}
