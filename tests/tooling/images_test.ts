import assert from "node:assert/strict";
import {
  archiveJsonFiles,
  blobPath,
  dockerManifest,
  imageConfig,
  type ImageSpec,
  type Layer,
  MEDIA_TYPES,
  normalizedRef,
  ociIndex,
  refTag,
} from "../../hack/images/docker_archive.ts";
import { canonicalJson, inputKey, sha256Hex } from "../../hack/images/cache.ts";
import { viewEntries } from "../../hack/images/view.ts";
import { operatorEntrypoint, runtimeFlags } from "../../hack/images/operator_image.ts";
import { parseStepTimings } from "../../hack/images/flux_install.ts";
import { IMAGE_NAMES, IMAGE_REFS, OPERATOR_IMAGE } from "../../hack/images/refs.ts";
import denoJson from "../../deno.json" with { type: "json" };

const layerA: Layer = {
  path: "/cache/a.tar",
  digest: `sha256:${"a".repeat(64)}`,
  size: 10,
  createdBy: "base",
};
const layerB: Layer = {
  path: "/cache/b.tar",
  digest: `sha256:${"b".repeat(64)}`,
  size: 20,
  createdBy: "app",
};
const spec: ImageSpec = {
  refs: ["minicluster.local/flux-view:1.2.3", "minicluster.local/flux-view:latest"],
  layers: [layerA, layerB],
  config: { Cmd: ["/bin/bash"], User: "65532:65532" },
  created: 1735689600,
};

Deno.test("images: the config lists each layer's digest as its diff id, in order, at a fixed date", () => {
  const config = imageConfig(spec);
  assert.deepEqual(config.rootfs, { type: "layers", diff_ids: [layerA.digest, layerB.digest] });
  assert.equal(config.created, "2025-01-01T00:00:00Z");
  assert.deepEqual(config.config, spec.config);
  assert.equal(config.os, "linux");
  assert.equal(config.architecture, "amd64");
  assert.deepEqual(
    (config.history as { created_by: string }[]).map((h) => h.created_by),
    ["base", "app"],
  );
});

Deno.test("images: manifest.json names the config and layers by blob path, with every tag", () => {
  const [entry] = dockerManifest(`sha256:${"c".repeat(64)}`, spec.refs, spec.layers);
  assert.deepEqual(entry, {
    Config: `blobs/sha256/${"c".repeat(64)}`,
    RepoTags: [...spec.refs],
    Layers: [`blobs/sha256/${"a".repeat(64)}`, `blobs/sha256/${"b".repeat(64)}`],
  });
  assert.equal(blobPath("sha256:abc"), "blobs/sha256/abc");
});

Deno.test("images: the OCI index has one named entry per reference", () => {
  const manifest = { mediaType: MEDIA_TYPES.manifest, digest: "sha256:d", size: 5 };
  const index = ociIndex(manifest, spec.refs) as {
    manifests: { digest: string; annotations: Record<string, string> }[];
  };
  assert.deepEqual(index.manifests.map((m) => m.annotations), [
    {
      "io.containerd.image.name": "minicluster.local/flux-view:1.2.3",
      "org.opencontainers.image.ref.name": "1.2.3",
    },
    {
      "io.containerd.image.name": "minicluster.local/flux-view:latest",
      "org.opencontainers.image.ref.name": "latest",
    },
  ]);
  assert.ok(index.manifests.every((m) => m.digest === "sha256:d"));
});

Deno.test("images: containerd's names are fully qualified, as the kubelet looks them up", () => {
  assert.equal(
    normalizedRef("minicluster-operator:0.1.0"),
    "docker.io/library/minicluster-operator:0.1.0",
  );
  assert.equal(normalizedRef("busybox"), "docker.io/library/busybox:latest");
  assert.equal(normalizedRef("flux/view:1"), "docker.io/flux/view:1");
  assert.equal(normalizedRef("minicluster.local/pause:3.10"), "minicluster.local/pause:3.10");
  assert.equal(normalizedRef("localhost:5000/pause"), "localhost:5000/pause:latest");
  assert.equal(normalizedRef("localhost/pause:1"), "localhost/pause:1");
});

Deno.test("images: a reference's tag ignores a registry port", () => {
  assert.equal(refTag("minicluster-operator:0.1.0"), "0.1.0");
  assert.equal(refTag("localhost:5000/pause"), "latest");
  assert.equal(refTag("localhost:5000/pause:3.10"), "3.10");
});

Deno.test("images: archive JSON files are content-addressed and consistent with each other", async () => {
  const files = await archiveJsonFiles(spec);
  assert.deepEqual([...files.keys()].filter((p) => !p.startsWith("blobs/")).sort(), [
    "index.json",
    "manifest.json",
    "oci-layout",
  ]);
  for (const [path, text] of files) {
    if (path.startsWith("blobs/")) assert.equal(path, `blobs/sha256/${await sha256Hex(text)}`);
  }
  const [docker] = JSON.parse(files.get("manifest.json")!);
  const config = JSON.parse(files.get(docker.Config)!);
  assert.deepEqual(config.rootfs.diff_ids, [layerA.digest, layerB.digest]);
  const index = JSON.parse(files.get("index.json")!);
  const manifest = JSON.parse(files.get(blobPath(index.manifests[0].digest))!);
  assert.equal(`blobs/sha256/${manifest.config.digest.split(":")[1]}`, docker.Config);
  assert.deepEqual(
    manifest.layers.map((l: { digest: string }) => l.digest),
    config.rootfs.diff_ids,
  );
  assert.ok(manifest.layers.every((l: { mediaType: string }) => l.mediaType === MEDIA_TYPES.layer));
  // Same inputs, same bytes: image digests do not depend on when they were built.
  assert.deepEqual(await archiveJsonFiles(spec), files);
});

Deno.test("images: the view has real directories and links each file into the install", () => {
  const entries = viewEntries([
    { path: "lib/python3.11/site-packages/flux/__init__.py", kind: "file" },
    { path: "bin", kind: "dir" },
    { path: "lib", kind: "dir" },
    { path: "bin/flux", kind: "file" },
    { path: "lib/libflux-core.so", kind: "symlink" },
    { path: "lib/python3.11", kind: "dir" },
    { path: "lib/python3.11/site-packages", kind: "dir" },
    { path: "lib/python3.11/site-packages/flux", kind: "dir" },
  ], "/opt/software/flux-1");
  assert.deepEqual(entries, [
    { kind: "dir", path: "bin" },
    { kind: "link", path: "bin/flux", target: "/opt/software/flux-1/bin/flux" },
    { kind: "dir", path: "lib" },
    {
      kind: "link",
      path: "lib/libflux-core.so",
      target: "/opt/software/flux-1/lib/libflux-core.so",
    },
    { kind: "dir", path: "lib/python3.11" },
    { kind: "dir", path: "lib/python3.11/site-packages" },
    { kind: "dir", path: "lib/python3.11/site-packages/flux" },
    {
      kind: "link",
      path: "lib/python3.11/site-packages/flux/__init__.py",
      target: "/opt/software/flux-1/lib/python3.11/site-packages/flux/__init__.py",
    },
  ]);
});

Deno.test("images: the operator runs with the permission flags of the compile task", () => {
  assert.deepEqual(
    runtimeFlags("deno compile --v8-flags=--x --allow-net --allow-sys=hostname --output d mod.ts"),
    ["--v8-flags=--x", "--allow-net", "--allow-sys=hostname"],
  );
  const entrypoint = operatorEntrypoint();
  assert.deepEqual(entrypoint.slice(0, 3), ["/usr/local/bin/deno", "run", "--cached-only"]);
  assert.equal(entrypoint.at(-1), "/app/mod.ts");
  for (const flag of entrypoint.slice(3, -1)) assert.ok(denoJson.tasks.compile.includes(flag));
  assert.ok(entrypoint.includes("--allow-net"));
  assert.equal(OPERATOR_IMAGE, `minicluster-operator:${denoJson.version}`);
});

Deno.test("images: every image has refs, the main one first", () => {
  for (const name of IMAGE_NAMES) assert.ok(IMAGE_REFS[name].length > 0, name);
  assert.ok(IMAGE_REFS["flux-view"].at(-1)!.endsWith(":latest"));
});

Deno.test("images: step timings come from the build log", () => {
  const log = "=== core-make: make -j2\n...\n=== step core-make 275\n=== step sched-build 370\n";
  assert.deepEqual(parseStepTimings(log), [
    { step: "flux core-make", seconds: 275 },
    { step: "flux sched-build", seconds: 370 },
  ]);
});

Deno.test("images: input keys ignore property order and change with any value", async () => {
  assert.equal(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] }), '{"a":[{"c":2,"d":1}],"b":1}');
  assert.equal(await inputKey({ a: 1, b: 2 }), await inputKey({ b: 2, a: 1 }));
  assert.notEqual(await inputKey({ a: 1 }), await inputKey({ a: 2 }));
  assert.match(await inputKey({}), /^[0-9a-f]{16}$/);
});
