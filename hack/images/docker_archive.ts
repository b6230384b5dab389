/**
 * Image archives in the format of `docker save` since Docker 25, which is at once a docker-archive
 * (manifest.json with RepoTags, a config whose rootfs.diff_ids are the sha256 of each uncompressed
 * layer tar) and an OCI image layout (oci-layout, index.json), with every file under
 * blobs/sha256/. `docker load`, `kind load image-archive` and `ctr images import` accept it.
 * The JSON builders are pure; `writeImageArchive` puts the files into one tar.
 */
import { sha256Hex } from "./cache.ts";
import { run } from "./progress.ts";

/** A layer tar on this machine, uncompressed, so its digest is also its diff id. */
export interface Layer {
  path: string;
  /** "sha256:<hex>" of the tar's bytes. */
  digest: string;
  size: number;
  /** What made the layer, for the config's history. */
  createdBy: string;
}

/** The runtime part of an image config (the fields a container runtime reads). */
export interface RuntimeConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  User?: string;
  WorkingDir?: string;
  Labels?: Record<string, string>;
}

export interface ImageSpec {
  /** Full references, e.g. "minicluster.local/pause:3.10"; the first is the main one. */
  refs: readonly string[];
  layers: readonly Layer[];
  config: RuntimeConfig;
  /** Seconds since the epoch, for "created": fixed, so equal inputs give equal digests. */
  created: number;
}

/** This machine's architecture as OCI names it: the images hold binaries built here. */
const OCI_ARCH = Deno.build.arch === "aarch64" ? "arm64" : "amd64";

export const MEDIA_TYPES = {
  index: "application/vnd.oci.image.index.v1+json",
  manifest: "application/vnd.oci.image.manifest.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layer: "application/vnd.oci.image.layer.v1.tar",
} as const;

export function blobPath(digest: string): string {
  const [algorithm, hex] = digest.split(":");
  return `blobs/${algorithm}/${hex}`;
}

function isoDate(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().replace(".000Z", "Z");
}

/** The image config (docker and OCI share it). */
export function imageConfig(spec: ImageSpec): Record<string, unknown> {
  const created = isoDate(spec.created);
  return {
    architecture: OCI_ARCH,
    os: "linux",
    created,
    config: spec.config,
    rootfs: { type: "layers", diff_ids: spec.layers.map((l) => l.digest) },
    history: spec.layers.map((l) => ({ created, created_by: l.createdBy })),
  };
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

function ociManifest(config: Descriptor, layers: readonly Layer[]): Record<string, unknown> {
  return {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.manifest,
    config,
    layers: layers.map((l) => ({ mediaType: MEDIA_TYPES.layer, digest: l.digest, size: l.size })),
  };
}

/** The tag of a reference ("latest" if it has none), as OCI's ref.name annotation wants it. */
export function refTag(ref: string): string {
  const lastSlash = ref.lastIndexOf("/");
  const colon = ref.lastIndexOf(":");
  return colon > lastSlash ? ref.slice(colon + 1) : "latest";
}

/**
 * A reference in the fully qualified form that containerd stores and the kubelet looks up:
 * "minicluster-operator:0.1.0" is "docker.io/library/minicluster-operator:0.1.0" there, as
 * Docker's normalisation says (a first component without "." or ":" is not a registry).
 */
export function normalizedRef(ref: string): string {
  const slash = ref.indexOf("/");
  const first = slash < 0 ? "" : ref.slice(0, slash);
  const hasRegistry = slash >= 0 &&
    (first.includes(".") || first.includes(":") || first === "localhost");
  const named = hasRegistry ? ref : slash < 0 ? `docker.io/library/${ref}` : `docker.io/${ref}`;
  const lastSlash = named.lastIndexOf("/");
  return named.lastIndexOf(":") > lastSlash || named.includes("@") ? named : `${named}:latest`;
}

/**
 * One index entry per reference, named the way containerd (io.containerd.image.name, fully
 * qualified, as `docker save` writes it) and OCI tools (org.opencontainers.image.ref.name, the
 * tag) read them.
 */
export function ociIndex(manifest: Descriptor, refs: readonly string[]): Record<string, unknown> {
  return {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.index,
    manifests: refs.map((ref) => ({
      ...manifest,
      annotations: {
        "io.containerd.image.name": normalizedRef(ref),
        "org.opencontainers.image.ref.name": refTag(ref),
      },
    })),
  };
}

/** docker-archive's manifest.json: one entry for the image, with every tag. */
export function dockerManifest(
  configDigest: string,
  refs: readonly string[],
  layers: readonly Layer[],
): Record<string, unknown>[] {
  return [{
    Config: blobPath(configDigest),
    RepoTags: [...refs],
    Layers: layers.map((l) => blobPath(l.digest)),
  }];
}

/** The JSON files of an archive, by path inside it; layers come separately. */
export async function archiveJsonFiles(spec: ImageSpec): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const blob = async (mediaType: string, text: string): Promise<Descriptor> => {
    const digest = `sha256:${await sha256Hex(text)}`;
    files.set(blobPath(digest), text);
    return { mediaType, digest, size: new TextEncoder().encode(text).length };
  };
  const config = await blob(MEDIA_TYPES.config, JSON.stringify(imageConfig(spec)));
  const manifest = await blob(
    MEDIA_TYPES.manifest,
    JSON.stringify(ociManifest(config, spec.layers)),
  );
  files.set("index.json", JSON.stringify(ociIndex(manifest, spec.refs)));
  files.set("oci-layout", JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  files.set("manifest.json", JSON.stringify(dockerManifest(config.digest, spec.refs, spec.layers)));
  return files;
}

/**
 * Writes the archive for `spec` to `out`, staging its files in `staging` (an empty directory on
 * the layers' file system: layers are hard-linked, not copied).
 */
export async function writeImageArchive(
  spec: ImageSpec,
  staging: string,
  out: string,
): Promise<void> {
  await Deno.mkdir(`${staging}/blobs/sha256`, { recursive: true });
  for (const layer of spec.layers) {
    const target = `${staging}/${blobPath(layer.digest)}`;
    // The same layer twice in one image is one blob.
    await Deno.link(layer.path, target).catch((e) => {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    });
  }
  for (const [path, text] of await archiveJsonFiles(spec)) {
    await Deno.writeTextFile(`${staging}/${path}`, text);
  }
  await run([
    "tar",
    "--create",
    `--file=${out}`,
    `--directory=${staging}`,
    "--sort=name",
    `--mtime=@${spec.created}`,
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mode=a+r,u+w",
    "--format=posix",
    "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
    "blobs",
    "index.json",
    "manifest.json",
    "oci-layout",
  ]);
}
