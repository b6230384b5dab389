// Locates the Kubernetes binaries: $MINICLUSTER_BIN_DIR when set, else whatever
// hack/build-binaries.sh reports (it builds into a versioned cache on first use and is cheap
// afterwards). Its progress goes straight to our stderr.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { COMPONENTS } from "./state.ts";
import { ensureDebianPackages } from "../debian.ts";

const BUILD_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "..", "build-binaries.sh");

/** `needed`: binary names hack/build-binaries.sh knows (it builds only those). */
export async function ensureBinaries(
  needed: readonly string[] = COMPONENTS,
): Promise<string> {
  const fromEnv = Deno.env.get("MINICLUSTER_BIN_DIR");
  if (fromEnv) {
    await assertComplete(fromEnv, needed);
    return fromEnv;
  }
  // runc is the one cgo build: a C compiler and libseccomp's headers (hack/build-binaries.sh).
  if (needed.includes("runc")) await ensureDebianPackages(["gcc", "libseccomp-dev"]);
  const out = await new Deno.Command("bash", {
    args: [BUILD_SCRIPT, ...needed],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`${BUILD_SCRIPT} failed (exit ${out.code})`);
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  const dir = lines[lines.length - 1];
  await assertComplete(dir, needed);
  return dir;
}

async function assertComplete(dir: string, needed: readonly string[]): Promise<void> {
  for (const name of needed) {
    const info = await Deno.stat(join(dir, name)).catch(() => undefined);
    if (!info?.isFile) throw new Error(`missing binary ${join(dir, name)}`);
  }
}
