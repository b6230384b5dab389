/**
 * The documentation covers every flag and every field: docs/configuration.md's table follows
 * the operator's flag table (controllers/minicluster/operator_flags.ts), docs/api.md has a row for every field of the CRD,
 * the README names every condition the operator sets, and docs/architecture.md's layout table is
 * the folders' table (hack/folders.ts) with the files in the tree.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { envName } from "../../runtime/options.ts";
import { Registry } from "../../runtime/metrics/metrics.ts";
import { RuntimeMetrics } from "../../runtime/metrics/runtime_metrics.ts";
import { StageMetrics } from "../../controllers/minicluster/pipeline/stage_metrics.ts";
import {
  FIRST_STATUS_DELAY_METRIC,
  FirstStatusDelays,
} from "../../controllers/minicluster/status/first_status_metric.ts";
import { FLAGS } from "../../controllers/minicluster/operator_flags.ts";
import {
  FAILED,
  READY,
  SIZE_CLAMPED,
  SPEC_INVALID,
  SUCCEEDED,
  UNAPPLIABLE,
} from "../../controllers/minicluster/status/status.ts";
import { renderApiDocs, type Schema } from "../../hack/api-docs.ts";
import { assemble, SOURCES } from "../../hack/install-manifest.ts";
import { layoutTable, withLayout } from "../../hack/layout-docs.ts";
import { FluxQueueMetrics } from "../../controllers/minicluster/fluxqueue/metrics.ts";
import {
  FLUX_QUEUE_OBSERVED,
  FLUX_UNREADABLE,
  LEAD_NOT_RUNNING,
  LEAD_UNREACHABLE,
  OBSERVED,
  REPORT_INVALID,
  REPORT_STALE,
  WAITING_FOR_REPORT,
} from "../../controllers/minicluster/fluxqueue/observation.ts";

const read = (path: string) => Deno.readTextFileSync(new URL(`../../${path}`, import.meta.url));
const README = read("README.md");
const CONFIGURATION = read("docs/configuration.md");
const API = read("docs/api.md");
const CRD = read("crds/minicluster.yaml");

/** The cells of docs/configuration.md's table row of `--flag`, trimmed. */
function flagRow(flag: string): string[] | undefined {
  const line = CONFIGURATION.split("\n").find((l) => l.startsWith(`| \`--${flag}\``));
  return line?.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
}

Deno.test("docs: docs/configuration.md's table has every flag, its env var, default and help", () => {
  for (const f of FLAGS) {
    const row = flagRow(f.name);
    assert.ok(row, `docs/configuration.md has no row for --${f.name}`);
    assert.equal(row[1], `\`${envName(f.name)}\``, `--${f.name}: env var`);
    const dflt = f.default === undefined || f.default === "" ? "" : `\`${f.default}\``;
    assert.equal(row[2], dflt, `--${f.name}: default`);
    assert.equal(row[3], f.help, `--${f.name}: help text`);
  }
  const rows = CONFIGURATION.split("\n").filter((l) => /^\| `--[a-z-]+`/.test(l));
  assert.equal(rows.length, FLAGS.length, "no row for a flag that does not exist");
});

/** Every (section path, field name) of a schema, as docs/api.md names them. */
function fields(path: string, s: Schema, out: Array<[string, string]> = []) {
  if (s.properties) {
    for (const [name, child] of Object.entries(s.properties)) {
      out.push([path, name]);
      fields(`${path}.${name}`, child, out);
    }
  } else if (s.items) fields(`${path}[]`, s.items, out);
  else if (typeof s.additionalProperties === "object") {
    fields(`${path}{}`, s.additionalProperties, out);
  }
  return out;
}

Deno.test("docs: docs/api.md documents every field of the CRD", () => {
  const root = parse(CRD).spec.versions[0].schema.openAPIV3Schema as Schema;
  const sections = new Map<string, string>();
  for (const part of API.split(/^### /m).slice(1)) {
    const m = /^`(.+)`/.exec(part);
    if (m) sections.set(m[1], part);
  }
  const all = [
    ...fields("spec", root.properties!.spec),
    ...fields("status", root.properties!.status),
  ];
  assert.ok(all.length > 100, `only ${all.length} fields found`);
  for (const [section, name] of all) {
    const text = sections.get(section);
    assert.ok(text, `docs/api.md has no section ${section}`);
    assert.match(text, new RegExp(`^\\| \`${name}\` `, "m"), `${section}.${name}`);
  }
  // Every field has a description in the CRD, so no row has an empty description.
  assert.doesNotMatch(API, /\|\s*\|\n/, "a row without a description");
});

Deno.test("docs: the API reference is generated from the CRD's descriptions", () => {
  const rendered = renderApiDocs(CRD);
  assert.match(rendered, /^# MiniCluster API reference \(`flux-framework.org\/v1alpha2`\)/);
  assert.match(rendered, /### `spec.containers\[\]`/);
  assert.match(rendered, /\| `size` \| `integer` \| `1` \|/);
});

Deno.test("docs: the README names every condition the operator sets", () => {
  for (const type of [READY, SUCCEEDED, FAILED, SPEC_INVALID, UNAPPLIABLE, SIZE_CLAMPED]) {
    assert.ok(README.includes(`\`${type}\``), type);
  }
});

Deno.test("install manifest: sources in apply order, each introduced by its path", () => {
  assert.equal(SOURCES[0], "deploy/namespace.yaml");
  assert.equal(SOURCES[1], "crds/minicluster.yaml");
  const text = assemble([
    {
      path: "a.yaml",
      text: "# comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
    },
    { path: "b.yaml", text: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: b}\n" },
  ]);
  assert.equal(text.match(/^---$/gm)?.length, 2, "one separator per source, no empty document");
  assert.ok(text.indexOf("# ---- a.yaml") < text.indexOf("# ---- b.yaml"));
  assert.throws(
    () => assemble([{ path: "c.yaml", text: "metadata: {}\n" }]),
    /c.yaml: a document without apiVersion\/kind/,
  );
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replaceAll(" ", "-");
}

/** The relative links of a Markdown text, outside code. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^```[^]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1])
    .filter((t) => !/^[a-z]+:/.test(t));
}

Deno.test("docs: the README is for users: under 450 lines, with a plot of bench/results it embeds", () => {
  const lines = README.split("\n").length;
  assert.ok(lines < 450, `the README has ${lines} lines`);
  // Lines a terminal shows: long tables live in docs/.
  const long = README.split("\n").map((l, i) => [i + 1, l.length]).filter(([, n]) => n > 160);
  assert.deepEqual(long, [], "README lines over 160 characters ([line, length])");
  // A user's first screen: install on their cluster, a first MiniCluster, a first MPI job.
  const firstScreen = README.split("\n").slice(0, 100).join("\n");
  for (
    const heading of [
      "## Install on your cluster",
      "## Your first MiniCluster",
      "## Your first MPI job",
    ]
  ) {
    assert.ok(firstScreen.includes(heading), heading);
  }
  assert.ok(README.indexOf("## Develop this project") > README.indexOf("## Your first MPI job"));
  const plot = /!\[[^\]]*\]\((bench\/results\/[^)]+\.svg)\)/.exec(README);
  assert.ok(plot, "the README embeds a plot of bench/results");
  assert.ok(Deno.statSync(new URL(`../../${plot[1]}`, import.meta.url)).isFile, plot[1]);
});

Deno.test("docs: every relative link of the README, docs/ and bench/README.md resolves", () => {
  const root = new URL("../../", import.meta.url);
  const pages = [
    "README.md",
    "bench/README.md",
    ...[...Deno.readDirSync(new URL("docs/", root))]
      .filter((e) => e.isFile && e.name.endsWith(".md")).map((e) => `docs/${e.name}`),
  ];
  for (const page of pages) {
    for (const link of relativeLinks(read(page))) {
      const [path, anchor] = link.split("#");
      const target = path ? new URL(path, new URL(page, root)) : new URL(page, root);
      assert.doesNotThrow(() => Deno.statSync(target), `${page}: ${link}`);
      if (!anchor || !target.pathname.endsWith(".md")) continue;
      const headings = Deno.readTextFileSync(target).split("\n")
        .filter((l) => /^#+ /.test(l)).map((l) => anchorOf(l.replace(/^#+ /, "")));
      assert.ok(headings.includes(anchor), `${page}: ${link} names no heading`);
    }
  }
});

Deno.test("docs: write-pacing.md has a row for every mechanism --pacing-off names and every pacing metric", () => {
  const doc = read("docs/write-pacing.md");
  const mechanisms = FLAGS.find((f) => f.name === "pacing-off")!.choices!;
  const rows = doc.split("\n").filter((l) => /^\| [a-z -]+ \(`[a-z-]+`\)/.test(l));
  assert.deepEqual(rows.map((l) => /\(`([a-z-]+)`\)/.exec(l)![1]), [...mechanisms]);
  for (const row of rows) {
    const cells = row.split("|").slice(1, -1).map((c) => c.trim());
    assert.match(cells[2], /bench\/|tests\//, `${cells[0]}: the measurement names its source`);
    assert.match(cells[3], /--pacing-off=/, `${cells[0]}: its off switch`);
  }
  const registry = new Registry();
  new RuntimeMetrics(registry);
  const pacingMetrics = [...registry.render().matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1])
    .filter((name) => /^(write_|freshness_fence_|watch_relist_|own_writes_)/.test(name));
  assert.ok(pacingMetrics.length >= 9, pacingMetrics.join(", "));
  for (const name of pacingMetrics) {
    assert.ok(doc.includes(`\`${name}`), `docs/write-pacing.md names ${name}`);
    assert.ok(read("docs/architecture.md").includes(`\`${name}`), `architecture.md names ${name}`);
  }
});

Deno.test("docs: architecture.md names every metric of the reconcile's stages and its status", () => {
  const registry = new Registry();
  new StageMetrics(registry);
  new FirstStatusDelays(registry);
  const names = [...registry.render().matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
  assert.ok(names.length >= 2, names.join(", "));
  const doc = read("docs/architecture.md");
  for (const name of names) assert.ok(doc.includes(`\`${name}`), `architecture.md names ${name}`);
  assert.ok(read("docs/write-pacing.md").includes(`\`${FIRST_STATUS_DELAY_METRIC}\``));
});

Deno.test("docs: Flux's queue: every reason of its condition and every metric is documented", () => {
  const page = read("docs/flux-queue.md");
  const reasons = [
    OBSERVED,
    LEAD_NOT_RUNNING,
    WAITING_FOR_REPORT,
    LEAD_UNREACHABLE,
    REPORT_INVALID,
    FLUX_UNREADABLE,
    REPORT_STALE,
  ];
  for (const reason of reasons) {
    assert.match(page, new RegExp(`^\\| \`${reason}\` +\\|`, "m"), reason);
    assert.ok(read("docs/status.md").includes(`\`${reason}\``), `status.md names ${reason}`);
  }
  assert.ok(README.includes(`\`${FLUX_QUEUE_OBSERVED}\``), "the README names the condition");
  const registry = new Registry();
  new FluxQueueMetrics(registry);
  const names = [...registry.render().matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
  assert.equal(names.length, 8);
  for (const name of names) {
    assert.ok(page.includes(`\`${name}`), `flux-queue.md names ${name}`);
    assert.ok(read("docs/architecture.md").includes(`\`${name}`), `architecture.md names ${name}`);
  }
});

Deno.test("docs: architecture.md's layout table is hack/folders.ts with the files in the tree", async () => {
  const doc = read("docs/architecture.md");
  assert.equal(
    doc,
    await withLayout(doc, await layoutTable()),
    "stale: run `deno run -A hack/layout-docs.ts`",
  );
});
