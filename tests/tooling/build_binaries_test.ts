/**
 * hack/build-binaries.sh run twice at once against one cache (`./task demo` and `./task test`
 * started together): a `go` on PATH that stands in for the real one makes it take a second
 * instead of minutes.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const SCRIPT = fileURLToPath(new URL("../../hack/build-binaries.sh", import.meta.url));
const VERSIONS = { K8S_VERSION: "v1.99.0", ETCD_VERSION: "v3.9.9", KWOK_VERSION: "v0.9.9" };
const BINARIES = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"];

/**
 * `go build ... -o OUT PKG` writes OUT at once, then takes a second (a long link): two builds of
 * the same file overlap. Every call is logged.
 */
const FAKE_GO = `#!/bin/bash
set -eu
echo "go $*" >>"$FAKE_GO_LOG"
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then out="$2"; shift; fi
  shift
done
[ -n "$out" ] || { echo "fake go: only build -o is supported" >&2; exit 2; }
printf '#!/bin/sh\\necho built by fake go\\n' >"$out"
sleep 1
`;

Deno.test("build-binaries: two concurrent runs share the cache; one waits, nothing races", async () => {
  const root = await Deno.makeTempDir();
  try {
    const cache = `${root}/cache`;
    const bin =
      `${cache}/bin/k8s-${VERSIONS.K8S_VERSION}-etcd-${VERSIONS.ETCD_VERSION}-kwok-${VERSIONS.KWOK_VERSION}`;
    const module = `${cache}/build/kubernetes-${VERSIONS.K8S_VERSION}`;
    await Deno.mkdir(bin, { recursive: true });
    await Deno.mkdir(module, { recursive: true });
    await Deno.mkdir(`${root}/path`);
    // Everything built before except one binary; its module exists (no `go mod download`).
    for (const name of BINARIES.filter((n) => n !== "kube-controller-manager")) {
      await Deno.writeTextFile(`${bin}/${name}`, "#!/bin/sh\n", { mode: 0o755 });
    }
    await Deno.writeTextFile(`${module}/go.mod`, "module local/k8sbuild\n");
    await Deno.writeTextFile(`${root}/path/go`, FAKE_GO, { mode: 0o755 });

    const env = {
      ...VERSIONS,
      MINICLUSTER_CACHE: cache,
      FAKE_GO_LOG: `${root}/go.log`,
      PATH: `${root}/path:${Deno.env.get("PATH")}`,
    };
    const run = () =>
      new Deno.Command("bash", { args: [SCRIPT], env, stdout: "piped", stderr: "piped" }).output();
    const text = (b: Uint8Array) => new TextDecoder().decode(b);
    const runs = await Promise.all([run(), run()]);

    for (const r of runs) {
      assert.ok(r.success, `exit ${r.code}:\n${text(r.stderr)}`);
      assert.equal(text(r.stdout).trim().split("\n").pop(), bin, "the cache dir, last line");
    }
    const stderr = runs.map((r) => text(r.stderr));
    assert.equal(
      stderr.filter((s) => s.includes("waiting for another build")).length,
      1,
      `exactly one run waits:\n${stderr.join("\n---\n")}`,
    );
    // The second run found the binary the first had built: one build in all.
    const calls = (await Deno.readTextFile(`${root}/go.log`)).trim().split("\n");
    assert.equal(calls.length, 1, calls.join("\n"));
    assert.match(calls[0], /^go build .* k8s\.io\/kubernetes\/cmd\/kube-controller-manager$/);
    const built = await Deno.stat(`${bin}/kube-controller-manager`);
    assert.ok(built.isFile && (built.mode! & 0o111) !== 0, "built and executable");
    // No temporary file is left behind.
    const left = [...Deno.readDirSync(bin)].map((e) => e.name).sort();
    assert.deepEqual(left, [...BINARIES].sort());
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("build-binaries: containerd and runc are rebuilt when their pin changes, nothing else", async () => {
  const root = await Deno.makeTempDir();
  try {
    const cache = `${root}/cache`;
    const bin =
      `${cache}/bin/k8s-${VERSIONS.K8S_VERSION}-etcd-${VERSIONS.ETCD_VERSION}-kwok-${VERSIONS.KWOK_VERSION}`;
    await Deno.mkdir(`${root}/path`, { recursive: true });
    await Deno.writeTextFile(`${root}/path/go`, FAKE_GO, { mode: 0o755 });
    // The throwaway modules exist, so no `go mod download` is needed.
    for (const dir of ["containerd-v2.9.0", "containerd-v2.9.1", "runc-v1.9.0"]) {
      await Deno.mkdir(`${cache}/build/${dir}`, { recursive: true });
      await Deno.writeTextFile(`${cache}/build/${dir}/go.mod`, "module local/build\n");
    }
    const log = `${root}/go.log`;
    const run = async (containerd: string) => {
      await Deno.writeTextFile(log, "");
      const out = await new Deno.Command("bash", {
        args: [SCRIPT, "containerd", "runc"],
        env: {
          ...VERSIONS,
          CONTAINERD_VERSION: containerd,
          RUNC_VERSION: "v1.9.0",
          MINICLUSTER_CACHE: cache,
          FAKE_GO_LOG: log,
          PATH: `${root}/path:${Deno.env.get("PATH")}`,
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
      const built = (await Deno.readTextFile(log)).trim().split("\n").filter((l) => l);
      return built.map((l) => l.split(" ").pop()!).sort();
    };
    const stamp = (name: string) => Deno.readTextFile(`${bin}/${name}.version`);

    assert.deepEqual(await run("v2.9.0"), [
      "github.com/containerd/containerd/v2/cmd/containerd",
      "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
      "github.com/containerd/containerd/v2/cmd/ctr",
      "github.com/opencontainers/runc",
    ]);
    assert.equal(await stamp("containerd"), "v2.9.0\n");
    assert.equal(await stamp("runc"), "v1.9.0\n");
    assert.deepEqual(await run("v2.9.0"), [], "built and stamped: nothing to do");
    assert.deepEqual(await run("v2.9.1"), [
      "github.com/containerd/containerd/v2/cmd/containerd",
      "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
      "github.com/containerd/containerd/v2/cmd/ctr",
    ]);
    assert.equal(await stamp("containerd"), "v2.9.1\n");
    const left = [...Deno.readDirSync(bin)].map((e) => e.name).sort();
    assert.deepEqual(left, [
      "containerd",
      "containerd-shim-runc-v2",
      "containerd.version",
      "ctr",
      "runc",
      "runc.version",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
