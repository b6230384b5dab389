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

async function apt(args: string[]): Promise<boolean> {
  const out = await new Deno.Command("apt-get", {
    args,
    env: { DEBIAN_FRONTEND: "noninteractive" },
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  return out.success;
}

/** Installs the packages of `names` that are not installed yet (an index update if needed). */
export async function ensureDebianPackages(names: readonly string[]): Promise<void> {
  const missing: string[] = [];
  for (const name of names) if (!await installed(name)) missing.push(name);
  if (missing.length === 0) return;
  console.error(`[debian] installing ${missing.join(" ")}`);
  if (await apt(["install", "-y", "-qq", ...missing])) return;
  if (!await apt(["update", "-qq"]) || !await apt(["install", "-y", "-qq", ...missing])) {
    throw new Error(`apt-get install ${missing.join(" ")} failed`);
  }
}
