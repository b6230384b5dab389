/**
 * Draws docs/objects.svg: the objects a MiniCluster makes and how they connect, generated so that
 * it follows the code. The boxes are the rows of the table of child kinds
 * (controllers/minicluster/kinds/child_kinds.ts: wave, pruned, activation condition) with the
 * objects `render` builds for a sample MiniCluster that turns every optional child on; what the
 * objects say decides the arrows: ownerReferences (ownership), a Service's selector against the
 * pods' labels (selects), the pods' volumes (mounts) and their `schedulingGroup` (names the
 * PodGroup). Which spec field makes an optional object is found by rendering the sample without
 * it. Declared here, as they are not in the objects: the pods the Job controller makes (its labels
 * on them), the workspace sizing the entrypoint, and the FailedCreate Events the operator reads.
 *
 *   deno run -A hack/object-diagram.ts           write docs/objects.svg
 *   deno run -A hack/object-diagram.ts --check   exit 1 when docs/objects.svg is stale (CI)
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod, PodSpec, Service, Volume } from "kubernetes-types/core/v1.d.ts";
import type { MiniCluster } from "../api/mod.ts";
import { CHILD_KINDS, type ChildKind } from "../controllers/minicluster/kinds/child_kinds.ts";
import { renderChildren } from "../controllers/minicluster/render/render.ts";
import type { KubeObject } from "../runtime/cache/store.ts";
import { denoFmt, writeOrCheck } from "./generated_file.ts";

const OUTPUT = "docs/objects.svg";
const NAME = "sample";

/** A MiniCluster with every optional child: a gang, a services pod, a container with ports. */
export const SAMPLE: MiniCluster = {
  apiVersion: "flux-framework.org/v1alpha2",
  kind: "MiniCluster",
  metadata: { name: NAME, namespace: "default" },
  spec: {
    size: 2,
    interactive: true,
    gang: {},
    containers: [
      { name: "flux", image: "ubuntu:noble", runFlux: true },
      { name: "web", image: "nginx:1.27", noWrapEntrypoint: true, ports: [80] },
    ],
    services: [{ name: "api", image: "nginx:1.27", ports: [5000] }],
  },
};

/** The sample without one optional field: the objects that go are there because of it. */
const FEATURES: ReadonlyArray<{ field: string; without: (mc: MiniCluster) => void }> = [
  { field: "spec.gang", without: (mc) => delete mc.spec.gang },
  { field: "spec.services", without: (mc) => delete mc.spec.services },
  {
    field: "containers[].ports",
    without: (mc) => mc.spec.containers.forEach((c) => delete c.ports),
  },
];

/** Labels the Job controller puts on the pods it makes (Kubernetes', not in the template). */
function jobControllerLabels(job: Job): Record<string, string> {
  const name = job.metadata?.name ?? "";
  return { "job-name": name, "batch.kubernetes.io/job-name": name };
}

export interface Box {
  id: string;
  title: string;
  lines: string[];
  /** Drawn dashed: observed, not made. */
  observed?: boolean;
}

export interface Edge {
  from: string;
  to: string;
  relation: Relation;
  label: string;
}

type Relation = "owns" | "selects" | "mounts" | "names" | "sizes" | "about";

const COLORS: Record<Relation, string> = {
  owns: "#333333",
  selects: "#1f6feb",
  mounts: "#1a7f37",
  names: "#8250df",
  sizes: "#bc4c00",
  about: "#6e7781",
};

const LEGEND: Record<Relation, string> = {
  owns: "owns (ownerReference, controller)",
  selects: "a Service selects the pods",
  mounts: "the pods mount it",
  names: "the pods name it (schedulingGroup)",
  sizes: "fixes the sizes it is built at",
  about: "observed: the Job controller's Events",
};

const keyOf = (o: KubeObject) => `${o.kind}/${o.metadata?.name}`;
const shown = (name: string) => name.replace(NAME, "<name>");

async function render(mc: MiniCluster): Promise<KubeObject[]> {
  return await renderChildren(structuredClone(mc)) as KubeObject[];
}

/** The row of the child-kind table an object of `kind` belongs to. */
function rowOf(kind: string): ChildKind {
  const row = CHILD_KINDS.find((r) => r.rt.kind === kind);
  if (!row) throw new Error(`no row of child_kinds.ts for ${kind}`);
  return row;
}

/** What the row says of its objects: when they are written, pruned, where the kind is served. */
function rowFacts(row: ChildKind, feature: string | undefined): string {
  const facts = [
    row.wave === undefined ? "observed only" : `wave ${row.wave}`,
    ...(row.pruned ? ["pruned"] : []),
    ...(feature ? [`with ${feature}`] : []),
    ...(row.whereServed ? ["where served"] : []),
  ];
  return facts.join(" · ");
}

function apiOf(row: ChildKind): string {
  return row.rt.group ? `${row.rt.group}/${row.rt.version}` : row.rt.version;
}

const volumeRefs = (v: Volume): string[] => [
  ...(v.configMap?.name ? [`ConfigMap/${v.configMap.name}`] : []),
  ...(v.secret?.secretName ? [`Secret/${v.secret.secretName}`] : []),
  ...(v.projected?.sources ?? []).flatMap((s) => [
    ...(s.configMap?.name ? [`ConfigMap/${s.configMap.name}`] : []),
    ...(s.secret?.name ? [`Secret/${s.secret.name}`] : []),
  ]),
];

const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/** The boxes and arrows, from the rows and the sample's objects. */
export async function diagram(): Promise<{ boxes: Box[]; edges: Edge[] }> {
  const objects = await render(SAMPLE);
  const madeBy = new Map<string, string>();
  for (const f of FEATURES) {
    const mc = structuredClone(SAMPLE);
    f.without(mc);
    const left = new Set((await render(mc)).map(keyOf));
    for (const o of objects) if (!left.has(keyOf(o))) madeBy.set(keyOf(o), f.field);
  }
  const order = (o: KubeObject) => CHILD_KINDS.indexOf(rowOf(o.kind ?? ""));
  const children = objects.map((o, i) => ({ o, i }))
    .sort((a, b) => order(a.o) - order(b.o) || a.i - b.i).map(({ o }) => o);

  const boxes: Box[] = [{
    id: "MiniCluster",
    title: `MiniCluster ${shown(NAME)}`,
    lines: ["flux-framework.org/v1alpha2", "its status reports on all of these"],
  }];
  const edges: Edge[] = [];
  const pods: Array<{ id: string; spec: Partial<PodSpec>; labels: Record<string, string> }> = [];
  for (const o of children) {
    const row = rowOf(o.kind ?? "");
    const id = keyOf(o);
    boxes.push({
      id,
      title: `${o.kind} ${shown(o.metadata?.name ?? "")}`,
      lines: [apiOf(row), rowFacts(row, madeBy.get(id))],
    });
    for (const ref of o.metadata?.ownerReferences ?? []) {
      if (ref.controller && ref.kind === "MiniCluster") {
        edges.push({ from: "MiniCluster", to: id, relation: "owns", label: "" });
      }
    }
    if (o.kind === "Pod") {
      const pod = o as Pod;
      pods.push({ id, spec: pod.spec ?? {}, labels: pod.metadata?.labels ?? {} });
    }
    if (o.kind === "Job") {
      const job = o as Job;
      const podsId = "pods";
      boxes.push({
        id: podsId,
        title: `Pods ${shown(job.metadata?.name ?? "")}-<index>-…`,
        lines: [
          `the Job controller makes ${job.spec?.parallelism} (parallelism)`,
          `Flux brokers <name>-<index>.${shown(job.spec?.template?.spec?.subdomain ?? "")}`,
        ],
      });
      edges.push({ from: id, to: podsId, relation: "owns", label: "" });
      pods.push({
        id: podsId,
        spec: job.spec?.template?.spec ?? {},
        labels: { ...job.spec?.template?.metadata?.labels, ...jobControllerLabels(job) },
      });
    }
  }
  for (const p of pods) {
    for (const ref of new Set((p.spec.volumes ?? []).flatMap(volumeRefs))) {
      if (boxes.some((b) => b.id === ref)) {
        edges.push({ from: p.id, to: ref, relation: "mounts", label: "mounts" });
      }
    }
    const group = (p.spec as { schedulingGroup?: { podGroupName?: string } }).schedulingGroup
      ?.podGroupName;
    if (group) {
      edges.push({ from: p.id, to: `PodGroup/${group}`, relation: "names", label: "names" });
    }
  }
  for (const s of children.filter((o) => o.kind === "Service") as Service[]) {
    for (const p of pods) {
      if (selects(s.spec?.selector ?? {}, p.labels)) {
        const headless = s.spec?.clusterIP === "None" ? "selects (DNS)" : "selects";
        edges.push({ from: keyOf(s), to: p.id, relation: "selects", label: headless });
      }
    }
  }
  const workspace = children.find((o) => o.kind === "MiniClusterWorkspace");
  const entrypoint = children.find((o) => o.kind === "ConfigMap");
  if (workspace && entrypoint) {
    edges.push({
      from: keyOf(workspace),
      to: keyOf(entrypoint),
      relation: "sizes",
      label: "maxSize: the hostlist",
    });
  }
  // The rows that are watched but never written (the Job controller's FailedCreate Events).
  for (const row of CHILD_KINDS.filter((r) => r.wave === undefined)) {
    boxes.push({
      id: row.key,
      title: `${row.rt.kind} (${row.fieldSelector?.match(/reason=(\w+)/)?.[1] ?? row.key})`,
      lines: [apiOf(row), rowFacts(row, undefined)],
      observed: true,
    });
    const job = children.find((o) => o.kind === "Job");
    if (job) edges.push({ from: row.key, to: keyOf(job), relation: "about", label: "about" });
  }
  return { boxes, edges };
}

const esc = (s: string) =>
  s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** The SVG of `d`: the MiniCluster left, its children in a column, the pods and Events right. */
export function drawSvg(d: { boxes: Box[]; edges: Edge[] }): string {
  const BOX_H = 54, GAP = 14, TOP = 46;
  const A = { x: 20, w: 200 }, B = { x: 340, w: 300 }, C = { x: 800, w: 290 };
  const width = C.x + C.w + 20;
  const pos = new Map<string, { x: number; y: number; w: number }>();
  const middle = d.boxes.filter((b) => b.id !== "MiniCluster" && b.id !== "pods" && !b.observed);
  middle.forEach((b, i) => pos.set(b.id, { x: B.x, y: TOP + i * (BOX_H + GAP), w: B.w }));
  const columnBottom = TOP + middle.length * (BOX_H + GAP) - GAP;
  pos.set("MiniCluster", { x: A.x, y: (TOP + columnBottom - BOX_H) / 2, w: A.w });
  const right = d.boxes.filter((b) => b.id === "pods" || b.observed);
  const jobY = [...pos].find(([id]) => id.startsWith("Job/"))?.[1].y ?? TOP;
  right.forEach((b, i) => {
    const y = b.id === "pods" ? (TOP + columnBottom - BOX_H) / 2 : jobY + (i + 1) * (BOX_H + GAP);
    pos.set(b.id, { x: C.x, y: Math.min(y, columnBottom - BOX_H), w: C.w });
  });
  const legendY = columnBottom + 30;
  const relations = Object.keys(LEGEND) as Relation[];
  const height = legendY + Math.ceil(relations.length / 2) * 20 + 16;

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<!-- GENERATED by \`deno run -A hack/object-diagram.ts\` from the table of child kinds ` +
    `(controllers/minicluster/kinds/child_kinds.ts) and the objects render builds; do not edit. -->`,
    "<defs>",
    ...relations.map((r) =>
      `<marker id="arrow-${r}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" ` +
      `markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" ` +
      `fill="${COLORS[r]}"/></marker>`
    ),
    "</defs>",
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="20" y="24" font-size="15" font-weight="bold">The objects of a MiniCluster</text>`,
  ];
  const mid = (id: string) => {
    const p = pos.get(id)!;
    return { ...p, cy: p.y + BOX_H / 2 };
  };
  // Edges first, so the boxes cover their ends.
  d.edges.forEach((e, i) => {
    const a = mid(e.from), b = mid(e.to);
    const color = COLORS[e.relation];
    const dash = e.relation === "owns"
      ? ""
      : e.relation === "about"
      ? ` stroke-dasharray="2,3"`
      : ` stroke-dasharray="6,3"`;
    const style = `fill="none" stroke="${color}" stroke-width="1.4"${dash} ` +
      `marker-end="url(#arrow-${e.relation})"`;
    let path: string, lx: number, ly: number, anchor = "middle";
    if (a.x === b.x) {
      // Within a column: an arc on its right side, labelled at its outermost point.
      const x = a.x + a.w, bend = x + 36 + (i % 3) * 10;
      path = `M${x},${a.cy} C${bend},${a.cy} ${bend},${b.cy} ${x},${b.cy}`;
      lx = x + (bend - x) * 0.75 + 4;
      ly = (a.cy + b.cy) / 2 + 4;
      anchor = "start";
    } else {
      const [x1, x2] = a.x < b.x ? [a.x + a.w, b.x] : [a.x, b.x + b.w];
      path = `M${x1},${a.cy} L${x2},${b.cy}`;
      const t = a.x < b.x ? 0.3 : 0.7;
      lx = x1 + (x2 - x1) * t;
      ly = a.cy + (b.cy - a.cy) * t - 4;
    }
    out.push(`<path d="${path}" ${style}/>`);
    if (e.label) {
      out.push(
        `<text x="${lx.toFixed(1)}" y="${ly.toFixed(1)}" fill="${color}" font-size="11" ` +
          `text-anchor="${anchor}" paint-order="stroke" stroke="#ffffff" stroke-width="3">` +
          `${esc(e.label)}</text>`,
      );
    }
  });
  for (const b of d.boxes) {
    const p = pos.get(b.id)!;
    const dash = b.observed ? ` stroke-dasharray="4,3"` : "";
    const fill = b.id === "MiniCluster" ? "#ddf4ff" : b.observed ? "#f6f8fa" : "#fff8c5";
    out.push(
      `<rect x="${p.x}" y="${p.y}" width="${p.w}" height="${BOX_H}" rx="6" fill="${fill}" ` +
        `stroke="#57606a"${dash}/>`,
      `<text x="${p.x + 8}" y="${p.y + 17}" font-weight="bold">${esc(b.title)}</text>`,
      ...b.lines.map((l, i) =>
        `<text x="${p.x + 8}" y="${p.y + 32 + i * 14}" font-size="11" fill="#57606a">${
          esc(l)
        }</text>`
      ),
    );
  }
  relations.forEach((r, i) => {
    const x = 20 + (i % 2) * 380, y = legendY + Math.floor(i / 2) * 20;
    const dash = r === "owns"
      ? ""
      : r === "about"
      ? ` stroke-dasharray="2,3"`
      : ` stroke-dasharray="6,3"`;
    out.push(
      `<path d="M${x},${y} L${x + 40},${y}" stroke="${COLORS[r]}" stroke-width="1.4"${dash} ` +
        `marker-end="url(#arrow-${r})"/>`,
      `<text x="${x + 48}" y="${y + 4}">${esc(LEGEND[r])}</text>`,
    );
  });
  out.push("</svg>", "");
  return out.join("\n");
}

/** docs/objects.svg as it should be: drawn, then formatted as `deno fmt` formats the tree. */
export async function objectsSvg(): Promise<string> {
  return await denoFmt(drawSvg(await diagram()), "svg");
}

if (import.meta.main) {
  Deno.exit(
    await writeOrCheck(OUTPUT, await objectsSvg(), {
      check: Deno.args.includes("--check"),
      regenerate: "deno run -A hack/object-diagram.ts",
    }),
  );
}
