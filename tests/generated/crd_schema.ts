/**
 * The MiniCluster CRD's OpenAPI schema, read from crds/minicluster.yaml, and lookups by field path
 * ("spec.flux.scheduler.queuePolicy", "spec.containers[].ports[]"). The generated-input
 * arbitraries take their enums, bounds and defaults from here, so they follow the CRD as it
 * changes instead of a copy of it.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import type { OpenApiSchema } from "../../api/openapi_schema.ts";

type Schema = OpenApiSchema;

const CRD_PATH = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "crds",
  "minicluster.yaml",
);

let root: Schema | undefined;

function crdSchema(): Schema {
  if (!root) {
    const crd = parse(Deno.readTextFileSync(CRD_PATH));
    const version = crd.spec.versions.find((v: { name: string }) => v.name === "v1alpha2");
    root = version.schema.openAPIV3Schema as Schema;
  }
  return root;
}

/** The schema at `path`: dots between properties, `[]` for list items, `{}` for map values. */
function schemaAt(path: string): Schema {
  let node = crdSchema();
  for (const part of path.split(".")) {
    const name = part.replace(/(\[\]|\{\})+$/, "");
    if (name) {
      const next = node.properties?.[name];
      if (!next) throw new Error(`the CRD has no field ${path} (at ${name})`);
      node = next;
    }
    for (const suffix of part.slice(name.length).match(/\[\]|\{\}/g) ?? []) {
      const next = suffix === "[]" ? node.items : node.additionalProperties;
      if (!next || next === true) throw new Error(`the CRD has no ${suffix} at ${path}`);
      node = next as Schema;
    }
  }
  return node;
}

export function enumOf(path: string): string[] {
  const e = schemaAt(path).enum;
  if (!e) throw new Error(`${path} has no enum in the CRD`);
  return e as string[];
}

/** [minimum, maximum] of an integer field, with `fallbackMax` when the CRD sets none. */
export function boundsOf(path: string, fallbackMax: number): [number, number] {
  const s = schemaAt(path);
  return [s.minimum ?? 0, s.maximum ?? fallbackMax];
}

export function defaultOf<T>(path: string): T {
  const d = schemaAt(path).default;
  if (d === undefined) throw new Error(`${path} has no default in the CRD`);
  return d as T;
}
