/**
 * The manifests the conformance suite feeds both operators: every valid fixture (the Go
 * operator's examples among them, byte for byte), every example, and (for admission only) the
 * invalid fixtures. `tests/fixtures/bad-input/` is left out on purpose: those are hostile inputs
 * for our quoting, which the Go operator's scripts run as shell by design (in the sandbox they
 * would only show, case after case, that Go's scripts run what they are given).
 */
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export interface Manifest {
  /** Relative to the repository, e.g. `tests/fixtures/manifests/valid/minimal.yaml`. */
  path: string;
  /** Short name for reports: `valid/minimal`, `examples/batch`, `invalid/size-zero`. */
  id: string;
  /** Only admission is compared (the fixture is one our CRD refuses). */
  admissionOnly: boolean;
  object: MiniClusterObject;
  /** Other objects of the file (a ConfigMap or PVC the MiniCluster mounts), created first. */
  extra: { apiVersion: string; kind: string; metadata: { name: string } }[];
}

export interface MiniClusterObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  spec?: Record<string, unknown>;
}

/**
 * Examples the two operators cannot be compared on, and why. Each one's MiniCluster is applied by
 * tests/integration/examples_test.ts and rendered by tests/unit/examples_test.ts all the same.
 */
export const EXAMPLES_NOT_COMPARED: Readonly<Record<string, string>> = {
  "bursting.yaml": "two MiniClusters in one file; the fixtures bursting-lead-broker and " +
    "burst-target-with-cert compare each side",
  "hpa.yaml": "a HorizontalPodAutoscaler beside it, and flux.drainGracePeriodSeconds, which " +
    "the Go API lacks",
  "kueue.yaml": "Kueue's queues beside it; the control plane runs no Kueue",
  "suspend.yaml": "spec.suspend, which the Go API lacks: created suspended, ours makes no Job",
};

const SOURCES: { dir: string; prefix: string; admissionOnly: boolean }[] = [
  { dir: "tests/fixtures/manifests/valid", prefix: "valid", admissionOnly: false },
  { dir: "examples", prefix: "examples", admissionOnly: false },
  { dir: "tests/fixtures/manifests/invalid", prefix: "invalid", admissionOnly: true },
];

export async function collectManifests(filter?: RegExp): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (const source of SOURCES) {
    const dir = join(REPO, source.dir);
    const files: string[] = [];
    try {
      for await (const e of Deno.readDir(dir)) {
        if (e.isFile && e.name.endsWith(".yaml")) files.push(e.name);
      }
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) continue;
      throw e;
    }
    for (const file of files.sort()) {
      if (source.dir === "examples" && file in EXAMPLES_NOT_COMPARED) continue;
      const id = `${source.prefix}/${basename(file, ".yaml")}`;
      if (filter && !filter.test(id)) continue;
      const docs = parseAllDocuments(await Deno.readTextFile(join(dir, file)))
        .map((d) => d.toJS()).filter((d) => d && typeof d === "object");
      const object = docs.find((d) => d.kind === "MiniCluster") as MiniClusterObject | undefined;
      if (!object) continue;
      const extra = docs.filter((d) => d !== object);
      out.push({
        path: `${source.dir}/${file}`,
        id,
        admissionOnly: source.admissionOnly,
        object,
        extra,
      });
    }
  }
  return out;
}
