// Debian packages the tooling needs (shellcheck, mmdebstrap, containerd, ...), installed with apt
// when missing, so that the README's two commands set up a fresh machine on their own.

async function installed(name: string): Promise<boolean> {
  const out = await new Deno.Command("dpkg-query", {
    args: ["-W", "-f=${Status}", name],
    stdout: "piped",
    stderr: "null",
  }).output().catch(() => undefined);
  return new TextDecoder().decode(out?.stdout).includes("install ok installed");
}

/**
 * How long apt-get waits for dpkg's lock that another apt-get holds (a `./task cluster up` beside
 * the tests, say) before giving up.
 */
const LOCK_TIMEOUT_SECONDS = 600;

async function apt(args: string[]): Promise<boolean> {
  const out = await new Deno.Command("apt-get", {
    args: ["-o", `DPkg::Lock::Timeout=${LOCK_TIMEOUT_SECONDS}`, ...args],
    env: { DEBIAN_FRONTEND: "noninteractive" },
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  return out.success;
}

/**
 * The installs of this process, one after another: the image build and the binaries' set-up ask
 * at the same time on a fresh machine, and a second apt-get fails at once on dpkg's lock.
 */
let installs: Promise<unknown> = Promise.resolve();

/** Installs the packages of `names` that are not installed yet (an index update if needed). */
export function ensureDebianPackages(names: readonly string[]): Promise<void> {
  const next = installs.then(() => install(names));
  installs = next.catch(() => {});
  return next;
}

async function install(names: readonly string[]): Promise<void> {
  const missing: string[] = [];
  for (const name of names) if (!await installed(name)) missing.push(name);
  if (missing.length === 0) return;
  console.error(`[debian] installing ${missing.join(" ")}`);
  if (await apt(["install", "-y", "-qq", ...missing])) return;
  if (!await apt(["update", "-qq"]) || !await apt(["install", "-y", "-qq", ...missing])) {
    throw new Error(`apt-get install ${missing.join(" ")} failed`);
  }
}
