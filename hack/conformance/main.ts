/**
 * deno task conformance — the differential conformance suite: the Go Flux Operator (built from
 * ../shared/peers/, hack/peer/go_operator.ts) and this operator, one after the other, on a private
 * control plane, over every manifest of the fixtures and examples (manifests.ts). Their children
 * are normalised and compared (compare.ts), the containers' commands are run in a sandbox with a
 * recording `flux` (behaviour.ts), and every difference must match an entry of the allow-list
 * (allow_list.ts), each of which quotes the line of docs/differences.md that documents it. Anything else fails.
 *
 *   deno task conformance [--only REGEX] [--json FILE] [--verbose]
 *
 * Exit 0 when every difference is allowed and every allow-list entry still matches something.
 */
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { down, up } from "../cluster/lifecycle.ts";
import { ensureGoOperator } from "../peer/go_operator.ts";
import { compareChildren, type Difference, normalise, sortKeys } from "./compare.ts";
import { collectManifests, REPO } from "./manifests.ts";
import {
  namespaceFor,
  OUR_CRD,
  runSide,
  type SideResult,
  startGoOperator,
  startOurOperator,
} from "./run.ts";
import { compareBehaviour } from "./behaviour.ts";
import { classify, report } from "./report.ts";
import type { ManifestContext } from "./allow_list.ts";

const log = (message: string) => console.error(`[conformance] ${message}`);
const since = (t0: number) => `at ${((performance.now() - t0) / 1000).toFixed(1)} s`;

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      only: { type: "string" },
      json: { type: "string" },
      dump: { type: "string" },
      verbose: { type: "boolean", default: false },
      "keep-cluster": { type: "boolean", default: false },
    },
  });
  const t0 = performance.now();
  const filter = values.only ? new RegExp(values.only) : undefined;
  const manifests = await collectManifests(filter);
  if (manifests.length === 0) throw new Error("no manifest matches");
  const go = await ensureGoOperator();
  log(`Go operator: ${go.binary}`);

  const dir = await Deno.makeTempDir({ prefix: "minicluster-conformance-" });
  const cleanup = () => down(dir, { quiet: true }).catch((e) => log(`down ${dir}: ${e}`));
  let result: number;
  try {
    const kubeconfig = await up({ dir, mode: "control-plane-only", nodes: 0 });
    const tCluster = performance.now();
    const goResult = await runSide("go", {
      kubeconfig,
      manifests,
      crd: go.crd,
      start: () => startGoOperator(go.binary, kubeconfig, join(dir, "go-operator.log")),
      removeAfterwards: true,
      log,
    });
    const tGo = performance.now();
    log(`Go operator settled after ${goResult.settleSeconds.toFixed(1)} s (${since(t0)})`);
    const oursResult = await runSide("ours", {
      kubeconfig,
      manifests,
      crd: OUR_CRD,
      start: () => startOurOperator(kubeconfig),
      log,
    });
    const tOurs = performance.now();
    log(`our operator settled after ${oursResult.settleSeconds.toFixed(1)} s (${since(t0)})`);

    if (values.dump) await dump(values.dump, manifests, goResult, oursResult);
    const differences = await compareAll(manifests, goResult, oursResult, log);
    const tCompared = performance.now();
    log(`children and scripts compared (${since(t0)})`);
    const contexts = new Map<string, ManifestContext>();
    let built = 0;
    for (const m of manifests) {
      const g = goResult.outcomes.get(m.id)!;
      const o = oursResult.outcomes.get(m.id)!;
      const children = (objects: typeof g.objects) =>
        new Set(objects.map((x) => `${x.kind}/${x.metadata?.name}`));
      const name = m.object.metadata.name;
      if (children(g.objects).has(`Job/${name}`) && children(o.objects).has(`Job/${name}`)) built++;
      contexts.set(m.id, {
        spec: m.object.spec ?? {},
        name,
        goChildren: children(g.objects),
        oursChildren: children(o.objects),
        oursConditions: o.conditions,
      });
    }
    const classified = classify(differences, contexts);
    if (values.json) {
      await Deno.writeTextFile(values.json, JSON.stringify(classified, null, 2) + "\n");
    }
    const seconds = (a: number, b: number) => `${((b - a) / 1000).toFixed(0)} s`;
    result = report(classified, {
      manifests,
      built,
      seconds: (performance.now() - t0) / 1000,
      phases: `Go operator build check and cluster ${seconds(t0, tCluster)}, Go operator ${
        seconds(tCluster, tGo)
      }, ours ${seconds(tGo, tOurs)}, comparison ${seconds(tOurs, tCompared)}`,
      verbose: values.verbose,
      filtered: filter !== undefined,
      anchors: {
        differences: await Deno.readTextFile(join(REPO, "docs", "differences.md")),
        guide: await Deno.readTextFile(join(REPO, "docs", "migrating-from-go.md")).catch(() => ""),
      },
    });
  } finally {
    if (values["keep-cluster"]) log(`cluster kept in ${dir}`);
    else await cleanup();
  }
  return result;
}

async function compareAll(
  manifests: Awaited<ReturnType<typeof collectManifests>>,
  go: SideResult,
  ours: SideResult,
  log: (m: string) => void,
): Promise<Difference[]> {
  const out: Difference[] = [];
  const behaviour: Promise<Difference[]>[] = [];
  // Pods are simulated a few manifests at a time: most of a run is waiting for sandboxes.
  const slots = new Semaphore(2);
  for (const [index, manifest] of manifests.entries()) {
    const g = go.outcomes.get(manifest.id)!;
    const o = ours.outcomes.get(manifest.id)!;
    if (g.admitted !== o.admitted) {
      out.push({
        manifest: manifest.id,
        kind: "admission",
        object: "",
        path: "",
        go: g.admitted ? "admitted" : g.refusal,
        ours: o.admitted ? "admitted" : o.refusal,
      });
    }
    if (manifest.admissionOnly || !g.admitted || !o.admitted) continue;
    const ctx = {
      manifest: manifest.id,
      name: manifest.object.metadata.name,
      goNamespace: namespaceFor("go", index),
      oursNamespace: namespaceFor("ours", index),
    };
    out.push(...compareChildren(ctx, g.objects, o.objects));
    behaviour.push(slots.run(() => compareBehaviour(ctx, g.objects, o.objects, log)));
  }
  for (const found of await Promise.all(behaviour)) out.push(...found);
  return out;
}

class Semaphore {
  #free: number;
  #waiting: (() => void)[] = [];
  constructor(n: number) {
    this.#free = n;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free === 0) await new Promise<void>((r) => this.#waiting.push(r));
    else this.#free--;
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

/** Writes both sides' normalised children per manifest, for reading a difference in context. */
async function dump(
  dir: string,
  manifests: Awaited<ReturnType<typeof collectManifests>>,
  go: SideResult,
  ours: SideResult,
): Promise<void> {
  for (const [index, manifest] of manifests.entries()) {
    for (const side of [go, ours]) {
      const outcome = side.outcomes.get(manifest.id)!;
      const namespace = namespaceFor(side.side, index);
      const objects = outcome.objects.map((o) => sortKeys(normalise(o as never, namespace)));
      const file = join(dir, side.side, `${manifest.id}.json`);
      await Deno.mkdir(dirname(file), { recursive: true });
      await Deno.writeTextFile(file, JSON.stringify(objects, null, 2) + "\n");
    }
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
