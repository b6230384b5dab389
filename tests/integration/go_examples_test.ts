/**
 * What "Go manifests apply" means, counted: every file of the Go Flux Operator's `examples/` (the
 * source snapshot of `../shared/peers/`) that holds a MiniCluster, applied byte for byte as its
 * docs tell users to (`kubectl apply -f`, here with `--dry-run=server`: kubectl's default strict
 * field validation, then this operator's CRD schema and CEL rules on the real kube-apiserver). The
 * test prints the count and holds the exact set of refused files with what refuses each, so that a
 * file newly refused, or newly accepted, fails it; docs/differences.md lists the refused ones with
 * the field to use instead, and the README states the count.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { type MiniCluster, validateSpec } from "../../api/mod.ts";
import { GO_OPERATOR_SNAPSHOT, snapshotPath } from "../../hack/peer/go_operator.ts";
import { integrationTest, type TestEnv } from "../harness.ts";

/**
 * The refused files (relative to the Go operator's `examples/`) and a pattern of kubectl's answer
 * for each: fields that the Go CRD of this snapshot no longer has either (docs/differences.md
 * names the field to use instead).
 */
const REFUSED: Readonly<Record<string, RegExp>> = {
  "elasticity/horizontal-autoscaler/v2-custom-metric/minicluster.yaml":
    /unknown field "spec\.containers\[0\]\.existingVolumes"/,
  "experimental/shared-process-space/minicluster.yaml":
    /unknown field "spec\.containers\[0\]\.securityContext\.addCapabilities"/,
  "machine-learning/fireworks/minicluster.yaml": /unknown field "spec\.volumes"/,
  "machine-learning/mnist/minicluster.yaml": /unknown field "spec\.volumes"/,
  "machine-learning/pytorch/minicluster.yaml": /unknown field "spec\.volumes"/,
  "machine-learning/ray/scikit-learn/minicluster.yaml": /unknown field "spec\.volumes"/,
  "machine-learning/tensorflow/minicluster.yaml": /unknown field "spec\.volumes"/,
};

/** Files the API server accepts and the operator reports as SpecInvalid, with its message. */
const SPEC_INVALID: Readonly<Record<string, RegExp>> = {
  "tests/batch/minicluster.yaml": /volume "data" has no source/,
};

/** Every YAML file under `dir` (recursively) with a document of kind MiniCluster, sorted. */
function miniClusterFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const entry of Deno.readDirSync(d)) {
      const path = join(d, entry.name);
      if (entry.isDirectory) walk(path);
      else if (/\.ya?ml$/.test(entry.name) && holdsMiniCluster(path)) found.push(path);
    }
  };
  walk(dir);
  return found.sort();
}

/**
 * Whether a document of the file is a MiniCluster, by its top-level `kind` line: read without a
 * YAML parser, because two of the files repeat a key, which the `yaml` package refuses and kubectl
 * takes (both of those files are accepted).
 */
function holdsMiniCluster(path: string): boolean {
  return /^kind:\s*MiniCluster\s*$/m.test(Deno.readTextFileSync(path));
}

/** The snapshot's `examples/`, unpacked into a temporary directory. */
async function unpackExamples(): Promise<{ dir: string; remove(): Promise<void> }> {
  const tmp = await Deno.makeTempDir({ prefix: "go-examples-" });
  const out = await new Deno.Command("tar", {
    args: ["-xzf", snapshotPath(), "-C", tmp, `${GO_OPERATOR_SNAPSHOT}/examples`],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.ok(out.success, `tar: ${new TextDecoder().decode(out.stderr)}`);
  return {
    dir: join(tmp, GO_OPERATOR_SNAPSHOT, "examples"),
    remove: () => Deno.remove(tmp, { recursive: true }),
  };
}

/**
 * `kubectl apply --dry-run=server -o json -f file` in the test's namespace: the MiniCluster as the
 * API server would store it (its defaults applied), or kubectl's answer when it is refused.
 */
async function dryRunApply(
  env: TestEnv,
  file: string,
): Promise<{ stored: MiniCluster } | { refused: string }> {
  const out = await new Deno.Command("kubectl", {
    args: [
      "--kubeconfig",
      env.kubeconfig,
      "--namespace",
      env.namespace,
      "apply",
      "--dry-run=server",
      "-o",
      "json",
      "-f",
      file,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  if (!out.success) return { refused: (stdout + new TextDecoder().decode(out.stderr)).trim() };
  const stored = JSON.parse(stdout) as MiniCluster;
  assert.equal(stored.kind, "MiniCluster", `${file}: ${stdout.slice(0, 200)}`);
  return { stored };
}

integrationTest(
  "Go examples: the Go operator's MiniCluster examples apply as written, but the refused ones",
  async (env) => {
    const examples = await unpackExamples();
    try {
      const files = miniClusterFiles(examples.dir);
      const refused: Record<string, string> = {};
      const specInvalid: Record<string, string> = {};
      for (const file of files) {
        const name = relative(examples.dir, file);
        const result = await dryRunApply(env, file);
        if ("refused" in result) refused[name] = result.refused;
        else {
          const problems = validateSpec(result.stored);
          if (problems.length > 0) specInvalid[name] = problems.join("; ");
        }
      }
      const accepted = files.length - Object.keys(refused).length;
      const list = (r: Record<string, string>) =>
        Object.entries(r).map(([f, why]) => `\n  ${f}: ${why}`).join("");
      console.log(
        `Go examples: ${accepted} of ${files.length} files holding a MiniCluster accepted ` +
          `(kubectl apply --dry-run=server, strict field validation); refused:${list(refused)}` +
          `\naccepted but SpecInvalid for the operator:${list(specInvalid)}`,
      );
      assert.deepEqual(Object.keys(refused).sort(), Object.keys(REFUSED).sort(), "refused files");
      for (const [file, why] of Object.entries(REFUSED)) {
        assert.match(refused[file], why, `${file} is refused for another reason`);
      }
      assert.deepEqual(
        Object.keys(specInvalid).sort(),
        Object.keys(SPEC_INVALID).sort(),
        "files accepted by the API server that the operator finds SpecInvalid",
      );
      for (const [file, why] of Object.entries(SPEC_INVALID)) {
        assert.match(specInvalid[file], why, `${file} is SpecInvalid for another reason`);
      }
    } finally {
      await examples.remove();
    }
  },
  { timeoutMs: 180_000 },
);
