/**
 * Every file of examples/ without a cluster, so that a broken example fails in seconds: each
 * MiniCluster passes what `kubectl apply` checks offline (the CRD's schema and CEL rules) and
 * renders to its children as the operator would build them (`minicluster-operator render`);
 * the headers say what each example shows and which images it runs; the files apply together
 * (`kubectl apply -f examples/`) without two of them naming one object. The API server's own
 * answer is tests/integration/examples_test.ts.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import type { MiniCluster } from "../../api/mod.ts";
import { applyErrors, withSchemaDefaults } from "../../api/crd_validation.ts";
import {
  MINICLUSTER_SCHEMA,
  MINICLUSTER_SPEC_REPLICAS_PATH,
} from "../../api/minicluster_schema.ts";
import { renderChildren } from "../../controllers/minicluster/render/render.ts";
import { IMAGE_REFS } from "../../hack/images/refs.ts";
import { REAL_NODE_LABEL } from "../../hack/cluster/real_node_config.ts";
import {
  exampleDocs,
  exampleFiles,
  exampleMiniClusters,
  exampleOnRealNodes,
  exampleText,
  isMiniCluster,
  localImageOf,
} from "../../testing/examples.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const files = exampleFiles();

Deno.test("examples: one file for each thing the tutorials teach", () => {
  for (
    const name of [
      "hello-world",
      "batch",
      "interactive",
      "services",
      "volumes",
      "elasticity",
      "minimal-service",
      "queueing",
      "gang",
      "mpi-openmpi",
      "mpi-mpich",
      "lammps",
      "cores",
      "shm",
      "kueue",
      "suspend",
      "ttl",
      "hpa",
      "archive",
      "bursting",
    ]
  ) assert.ok(files.includes(`${name}.yaml`), `examples/${name}.yaml is missing`);
});

for (const file of files) {
  Deno.test(`examples: ${file} passes the CRD's checks and renders`, async () => {
    const miniClusters = exampleMiniClusters(file);
    assert.ok(miniClusters.length > 0, `${file} holds no MiniCluster`);
    for (const mc of miniClusters) {
      const what = `${file}: ${mc.metadata?.name}`;
      // What render does with each document: the API server's checks, then the operator's build.
      assert.deepEqual(
        applyErrors(mc, MINICLUSTER_SCHEMA, MINICLUSTER_SPEC_REPLICAS_PATH),
        [],
        what,
      );
      const stored = withSchemaDefaults(mc, MINICLUSTER_SCHEMA) as MiniCluster;
      const children = await renderChildren(stored) as { kind: string }[];
      assert.equal(children.at(-1)?.kind, "Job", what);
    }
  });
}

Deno.test("examples: every header says what the file shows and which images it runs", () => {
  const known = new Set(Object.values(IMAGE_REFS).flat());
  for (const file of files) {
    const text = exampleText(file);
    const header = text.slice(0, text.search(/^[^#\n]/m));
    assert.match(header, /^# \S/, `${file}: no comment header`);
    assert.match(header, /^# Image: \S/m, `${file}: names no image for users`);
    const local = localImageOf(header);
    assert.ok(local, `${file}: names no local image ("# Local image: ...")`);
    assert.ok(known.has(local), `${file}: ${local} is not an image the local cluster builds`);
    // The file itself carries the image a user can pull; the local one only in its header.
    for (const mc of exampleMiniClusters(file)) {
      for (const c of mc.spec!.containers) {
        assert.ok(!c.image?.startsWith("minicluster.local/"), `${file}: ${c.image}`);
      }
    }
  }
});

Deno.test("examples: no two files name the same object (kubectl apply -f examples/)", () => {
  const seen = new Map<string, string>();
  for (const file of files) {
    for (const doc of exampleDocs(file)) {
      const key = `${doc.kind}/${doc.metadata.name}`;
      assert.ok(!seen.has(key), `${key} is in ${seen.get(key)} and ${file}`);
      seen.set(key, file);
    }
  }
});

Deno.test("examples: on the real nodes, the Flux containers run the header's local image", () => {
  const [mc] = exampleOnRealNodes("services.yaml");
  const images = Object.fromEntries(mc.spec!.containers.map((c) => [c.name, c.image]));
  assert.equal(images.flux, "minicluster.local/flux-app:latest");
  assert.equal(images.nginx, "nginx:1.27", "a sidecar keeps its image");
  assert.match(mc.spec!.flux!.container!.image!, /^minicluster\.local\/flux-view:/);
  assert.equal(mc.spec!.pod!.nodeSelector![REAL_NODE_LABEL], "true");
  assert.deepEqual(mc.spec!.pod!.tolerations, [
    { key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" },
  ]);
  const [mpi] = exampleOnRealNodes("mpi-openmpi.yaml");
  assert.equal(mpi.spec!.containers[0].image, "minicluster.local/mpi:latest");
  assert.equal(mpi.spec!.tasks, 6, "the rest of the spec as written");
  // The example itself is left as it is.
  assert.equal(
    exampleMiniClusters("mpi-openmpi.yaml")[0].spec!.containers[0].image,
    "ubuntu:noble",
  );
});

Deno.test("examples: the render command renders every example's MiniClusters", async () => {
  // One run of the command for all of them (it refuses documents that are not MiniClusters, so
  // those are left out), with the render task's permissions.
  const task = JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)).tasks.render as string;
  const flags = task.match(/--allow-[a-z-]+(?:=\S+)?/g)!;
  const miniClusters = files.flatMap((f) => exampleDocs(f).filter(isMiniCluster));
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, "mod.ts", "render", "-f", "-"],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(miniClusters.map((d) => stringify(d)).join("---\n")));
  await writer.close();
  const out = await child.output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.ok(out.success, stderr);
  const stdout = new TextDecoder().decode(out.stdout);
  assert.equal(stdout.match(/^kind: Job$/gm)?.length, miniClusters.length, stderr);
});
