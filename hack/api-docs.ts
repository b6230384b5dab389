/**
 * Generates docs/api.md, the MiniCluster field reference, from the descriptions, types, defaults
 * and validation rules of the CRD (crds/minicluster.yaml) — the same source the API types come
 * from, so the reference cannot drift from what the API server accepts.
 *
 *   deno run -A hack/api-docs.ts           rewrite docs/api.md
 *   deno run -A hack/api-docs.ts --check   exit 1 when docs/api.md is stale (CI)
 *
 * One section per object (spec, spec.containers[], spec.flux, ...), each a table of its fields;
 * nested objects link to their own section. Schemas shared through YAML anchors (the core/v1
 * security contexts and resource shapes) get one section per place they appear, which keeps every
 * path of the reference readable on its own.
 */
import type { OpenApiSchema } from "../api/openapi_schema.ts";
import { parse } from "yaml";
import { denoFmt, writeOrCheck } from "./generated_file.ts";

const ROOT = new URL("../", import.meta.url);
const OUTPUT = "docs/api.md";

/** The CRD's schema (api/openapi_schema.ts). */
export type Schema = OpenApiSchema;

interface Section {
  path: string;
  schema: Schema;
}

/** A GitHub-style heading anchor for a section path. */
function anchor(path: string): string {
  return path.toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-");
}

/** The object schema a field leads to (through arrays and maps), with its section path. */
function nested(path: string, s: Schema): Section | undefined {
  if (s.properties) return { path, schema: s };
  if (s.items) return nested(`${path}[]`, s.items);
  if (typeof s.additionalProperties === "object") {
    return nested(`${path}{}`, s.additionalProperties);
  }
  return undefined;
}

/** The type column: `string`, `[]integer`, `map[string]string`, `int-or-string`, `object`. */
function typeOf(s: Schema): string {
  if (s["x-kubernetes-int-or-string"]) return "int-or-string";
  if (s.type === "array") return `[]${s.items ? typeOf(s.items) : "any"}`;
  if (s.type === "object" && !s.properties && typeof s.additionalProperties === "object") {
    return `map[string]${typeOf(s.additionalProperties)}`;
  }
  if (s.type === "object" && s["x-kubernetes-preserve-unknown-fields"]) return "object (free-form)";
  return s.type ?? "any";
}

/** Validation that a reader needs to know, in words. */
function constraints(s: Schema): string[] {
  const out: string[] = [];
  if (s.enum) out.push(`one of ${s.enum.map((v) => `\`${v}\``).join(", ")}`);
  if (s.minimum !== undefined) out.push(`≥ ${s.minimum}`);
  if (s.maximum !== undefined) out.push(`≤ ${s.maximum}`);
  if (s.minLength !== undefined && s.minLength > 0) {
    out.push(`at least ${plural(s.minLength, "character")}`);
  }
  if (s.maxLength !== undefined) out.push(`at most ${plural(s.maxLength, "character")}`);
  if (s.minItems !== undefined && s.minItems > 0) {
    out.push(`at least ${plural(s.minItems, "item")}`);
  }
  if (s.maxItems !== undefined) out.push(`at most ${plural(s.maxItems, "item")}`);
  if (s.maxProperties !== undefined) {
    out.push(`at most ${plural(s.maxProperties, "entry").replace(/ys$/, "ies")}`);
  }
  if (s.pattern !== undefined && s.pattern.length <= 40) out.push(`matches \`${s.pattern}\``);
  if (s.format !== undefined) out.push(`format ${s.format}`);
  return out;
}

/** One line of a table cell: no pipes, no raw angle brackets (Markdown would read HTML). */
function cell(text: string): string {
  return text.replace(/\s+/g, " ").replaceAll("|", "\\|").replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;").trim();
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

function defaultOf(s: Schema): string {
  if (s.default === undefined) return "";
  return `\`${JSON.stringify(s.default)}\``;
}

/** The Markdown of one section and, depth first, of the sections it links to. */
function render(section: Section, out: string[]): void {
  const { path, schema } = section;
  out.push(`### \`${path}\``, "");
  if (schema.description) out.push(schema.description.trim(), "");
  const rules = schema["x-kubernetes-validations"] ?? [];
  if (rules.length > 0) {
    out.push("Rules:", "");
    for (const r of rules) out.push(`- ${cell(r.message ?? r.rule)}`);
    out.push("");
  }
  const required = new Set(schema.required ?? []);
  const children: Section[] = [];
  out.push("| Field | Type | Default | Description |", "| --- | --- | --- | --- |");
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const child = nested(`${path}.${name}`, field);
    const type = child
      ? `[${typeOf(field)}](#${anchor(child.path)})`.replace(/\[\]\]/, "[]]")
      : `\`${typeOf(field)}\``;
    const notes = [
      ...(required.has(name) ? ["**Required.**"] : []),
      field.description ? cell(field.description) : "",
      ...constraints(field).map((c) => `(${c})`),
      ...(field["x-kubernetes-validations"] ?? []).filter(() => !child).map((r) =>
        `Rule: ${cell(r.message ?? r.rule)}.`
      ),
    ].filter((s) => s !== "");
    out.push(`| \`${name}\` | ${type} | ${defaultOf(field)} | ${notes.join(" ")} |`);
    if (child) children.push(child);
  }
  out.push("");
  for (const child of children) render(child, out);
}

export function renderApiDocs(crdYaml: string): string {
  const crd = parse(crdYaml);
  const version = crd.spec.versions.find((v: { storage?: boolean }) => v.storage) ??
    crd.spec.versions[0];
  const root: Schema = version.schema.openAPIV3Schema;
  const group = crd.spec.group;
  const kind = crd.spec.names.kind;
  const out = [
    `# ${kind} API reference (\`${group}/${version.name}\`)`,
    "",
    "<!-- GENERATED by `deno run -A hack/api-docs.ts` from crds/minicluster.yaml; do not edit. -->",
    "",
    root.description?.trim() ?? "",
    "",
    `Short name \`${crd.spec.names.shortNames?.join("`, `") ?? ""}\`; the scale subresource maps ` +
    "`spec.size` (replicas) and `status.selector`, so `kubectl scale` and a " +
    "HorizontalPodAutoscaler work on a MiniCluster. Every rule below is checked by the API " +
    "server when the object is written; the operator reports what only it can check in the " +
    "`SpecInvalid` condition.",
    "",
    "## Contents",
    "",
  ];
  const body: string[] = [];
  const top = ["spec", "status"].map((p) => ({ path: p, schema: root.properties![p] }));
  for (const section of top) {
    body.push(`## ${section.path === "spec" ? "Spec" : "Status"}`, "");
    render(section, body);
  }
  for (const line of body) {
    const m = /^### `(.+)`$/.exec(line);
    if (m) {
      const depth = m[1].split(".").length - 1;
      out.push(`${"  ".repeat(depth)}- [\`${m[1]}\`](#${anchor(m[1])})`);
    }
  }
  out.push("", ...body);
  return out.join("\n").replace(/\n{3,}/g, "\n\n").trimEnd() + "\n";
}

async function main(args: string[]): Promise<number> {
  const crd = await Deno.readTextFile(new URL("crds/minicluster.yaml", ROOT));
  return await writeOrCheck(OUTPUT, await denoFmt(renderApiDocs(crd), "md"), {
    check: args.includes("--check"),
    regenerate: "deno run -A hack/api-docs.ts",
  });
}

if (import.meta.main) Deno.exit(await main(Deno.args));
