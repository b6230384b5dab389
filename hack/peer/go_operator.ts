/**
 * The Go Flux Operator, built from the source snapshot in `../shared/peers/` for side-by-side runs
 * (the conformance suite, the benchmark). Nothing of it enters this repository: the snapshot is
 * unpacked and built inside a temporary cache entry, and only the binary and its CRD are kept, in
 * `${MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-~/.cache}/minicluster-operator}/peers/<key>/`.
 *
 * The build is the one its Dockerfile does: CZMQ from Debian for the CURVE keygen (cgo), the real
 * keygen (`keygen.go.template`) in place of the dummy that returns an empty certificate, the
 * module's dependencies from the Go module proxy. The entry is keyed by the snapshot's sha256, the
 * Go version and this recipe; it is built under a lock (a second process waits, then reuses it) in
 * a temporary directory that is renamed into place once complete (`hack/images/cache.ts`).
 *
 *   deno run -A hack/peer/go_operator.ts   # builds when needed, prints the binary and the CRD
 *
 * API (the conformance suite and the benchmark use it):
 *   ensureGoOperator(): Promise<{ binary, crd }>   build once per key, then just the paths
 *   runGoOperator({ binary, kubeconfig, logFile, args? }): Promise<{ pid, stop(), logTail() }>
 */
import { sharedPath } from "../shared_material.ts";
import { join } from "node:path";
import { cachedDir, inputKey, sha256File } from "../images/cache.ts";
import { step } from "../images/progress.ts";
import { ensureDebianPackages } from "../debian.ts";

/** The snapshot this repository compares against (its README says which commit it is). */
export const GO_OPERATOR_SNAPSHOT = "flux-operator-0d75cef8";

/** Bumped when the build below changes, so that an old entry is not reused. */
const RECIPE = 1;

/** Debian packages the cgo keygen links against (as the Go operator's Dockerfile installs). */
const DEBIAN_PACKAGES = ["libsodium-dev", "libzmq3-dev", "libczmq-dev"];

export interface GoOperator {
  /** The `manager` executable; run it with `--kubeconfig`, `--metrics-bind-address`, ... */
  binary: string;
  /** Its CRD (`config/crd/bases/flux-framework.org_miniclusters.yaml`), same name as ours. */
  crd: string;
}

/** `$FLUX_OPERATOR_SNAPSHOT`, else `peers/<snapshot>.tar.gz` of the shared material. */
export function snapshotPath(): string {
  return sharedPath(
    `peers/${GO_OPERATOR_SNAPSHOT}.tar.gz`,
    Deno.env.get("FLUX_OPERATOR_SNAPSHOT") || undefined,
  );
}

export function peerCacheRoot(): string {
  const env = (name: string) => Deno.env.get(name) || undefined;
  const base = env("MINICLUSTER_CACHE") ??
    `${env("XDG_CACHE_HOME") ?? `${env("HOME") ?? "/root"}/.cache`}/minicluster-operator`;
  return `${base}/peers`;
}

async function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: Record<string, string>; log?: string } = {},
): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    cwd: opts.cwd,
    env: opts.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (opts.log) await Deno.writeTextFile(opts.log, text, { append: true });
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed (exit ${out.code}):\n${text.slice(-3000)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

async function goVersion(): Promise<string> {
  return (await run("go", ["env", "GOVERSION"])).trim();
}

/** Builds (once per key) and returns the Go operator's binary and CRD. */
export async function ensureGoOperator(): Promise<GoOperator> {
  const snapshot = snapshotPath();
  const inputs = {
    snapshot: await sha256File(snapshot),
    go: await goVersion(),
    arch: Deno.build.arch,
    recipe: RECIPE,
  };
  const dir = join(peerCacheRoot(), `${GO_OPERATOR_SNAPSHOT}-${await inputKey(inputs)}`);
  await cachedDir(dir, async (tmp) => {
    await ensureDebianPackages(DEBIAN_PACKAGES);
    const logFile = join(tmp, "build.log");
    const src = join(tmp, "src");
    await Deno.mkdir(src);
    await run("tar", ["-xzf", snapshot, "-C", src, "--strip-components=1"]);
    // As its Dockerfile's `make build-container`: the committed keygen.go is a stub.
    await Deno.copyFile(join(src, "pkg/flux/keygen.go.template"), join(src, "pkg/flux/keygen.go"));
    await step(
      `go build ${GO_OPERATOR_SNAPSHOT} (a few minutes)`,
      () =>
        run("go", ["build", "-trimpath", "-o", join(tmp, "manager"), "main.go"], {
          cwd: src,
          log: logFile,
          env: {
            GOFLAGS: "-mod=mod",
            GOTOOLCHAIN: "local",
            CGO_ENABLED: "1",
            CGO_LDFLAGS: "-lstdc++ -lczmq -lzmq",
          },
        }),
    );
    await Deno.copyFile(
      join(src, "config/crd/bases/flux-framework.org_miniclusters.yaml"),
      join(tmp, "crd.yaml"),
    );
    await Deno.writeTextFile(join(tmp, "inputs.json"), JSON.stringify(inputs, null, 2) + "\n");
    // Only the binary and the CRD stay: the sources are not ours to keep around.
    await Deno.remove(src, { recursive: true });
  });
  return { binary: join(dir, "manager"), crd: join(dir, "crd.yaml") };
}

export interface GoOperatorProcess {
  pid: number;
  /** SIGTERM, then SIGKILL after 10 s; resolves when it has exited and its log is written. */
  stop(): Promise<void>;
  /** The last lines of its log (stdout and stderr, in `logFile`). */
  logTail(lines?: number): string;
}

/**
 * Runs the Go operator as a local process against `kubeconfig`. It has no flag to watch only some
 * namespaces (it reconciles every MiniCluster it can see), no leader election here, and its
 * metrics and health ports are loopback ports of the kernel's choosing, so that several runs and
 * other programs on the machine never collide. Its log (it prints the CURVE secret key there, as
 * it does in its pods) goes to `logFile` only.
 */
export async function runGoOperator(opts: {
  binary: string;
  kubeconfig: string;
  logFile: string;
  args?: string[];
}): Promise<GoOperatorProcess> {
  await Deno.writeTextFile(opts.logFile, "");
  const child = new Deno.Command(opts.binary, {
    args: [
      `--kubeconfig=${opts.kubeconfig}`,
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=127.0.0.1:0",
      "--leader-elect=false",
      "--zap-devel=false",
      ...(opts.args ?? []),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const toLog = (stream: ReadableStream<Uint8Array>) =>
    stream.pipeTo(
      new WritableStream({
        async write(chunk) {
          await Deno.writeFile(opts.logFile, chunk, { append: true });
        },
      }),
    ).catch(() => {});
  const logged = Promise.all([toLog(child.stdout), toLog(child.stderr)]);
  return {
    pid: child.pid,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // gone
        }
      }, 10_000);
      await child.status;
      clearTimeout(timer);
      await logged;
    },
    logTail(lines = 40) {
      try {
        return Deno.readTextFileSync(opts.logFile).split("\n").slice(-lines).join("\n");
      } catch {
        return "";
      }
    },
  };
}

if (import.meta.main) {
  const { binary, crd } = await ensureGoOperator();
  console.log(binary);
  console.log(crd);
}
