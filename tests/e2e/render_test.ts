// `minicluster-operator render` prints the children the operator applies: for every example, each
// rendered object is found in the cluster after the operator reconciled it, and every field render
// set has the value the live object has (the apiserver adds defaults and status, never changes what
// was set). Only the generated CURVE key differs: render prints a placeholder.

import assert from "node:assert/strict";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import type { MiniCluster } from "../../api/mod.ts";
import { MiniClusters } from "../../api/resource.ts";
import type { ResourceType } from "../../runtime/client/resources.ts";
import { ConfigMaps, Jobs, Pods, Secrets, Services } from "../../runtime/client/resources.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import { PLACEHOLDER_UID } from "../../controllers/minicluster/render/render.ts";
import { eventually } from "../harness.ts";
import { e2eTest } from "./env.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const RESOURCES: Record<string, ResourceType> = {
  MiniClusterWorkspace: MiniClusterWorkspaces,
  ConfigMap: ConfigMaps,
  Secret: Secrets,
  Service: Services,
  Pod: Pods,
  Job: Jobs,
};

// deno-lint-ignore no-explicit-any -- objects compared field by field
type Obj = any;

/** Paths where `live` lacks or differs from what `rendered` sets. */
function mismatches(rendered: Obj, live: Obj, path = ""): string[] {
  if (rendered === null || typeof rendered !== "object") {
    return rendered === live
      ? []
      : [`${path}: rendered ${JSON.stringify(rendered)}, live ${JSON.stringify(live)}`];
  }
  if (Array.isArray(rendered)) {
    if (!Array.isArray(live) || live.length !== rendered.length) {
      return [`${path}: rendered ${rendered.length} items, live ${JSON.stringify(live)}`];
    }
    return rendered.flatMap((r, i) => mismatches(r, live[i], `${path}[${i}]`));
  }
  if (live === null || typeof live !== "object") return [`${path}: missing`];
  return Object.keys(rendered).flatMap((k) => mismatches(rendered[k], live[k], `${path}.${k}`));
}

async function render(file: string, namespace: string): Promise<Obj[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-env",
      join(ROOT, "mod.ts"),
      "render",
      "-f",
      file,
      "-n",
      namespace,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  if (!out.success) throw new Error(`render ${file}: ${text(out.stderr)}`);
  return parseAllDocuments(text(out.stdout)).map((d) => d.toJS());
}

const EXAMPLES = ["hello-world.yaml", "services.yaml", "minimal-service.yaml", "interactive.yaml"];

e2eTest("render prints the children the operator applies, for each example", async (env) => {
  await env.startOperator();
  for (const example of EXAMPLES) {
    const file = join(ROOT, "examples", example);
    const mc = parse(await Deno.readTextFile(file)) as MiniCluster;
    const rendered = await render(file, env.namespace);
    assert.ok(rendered.some((o) => o.kind === "Job"), `${example}: no Job rendered`);
    const created = await env.client.create<MiniCluster>(MiniClusters, {
      ...mc,
      metadata: { ...mc.metadata, namespace: env.namespace },
    });
    const uid = created.metadata!.uid!;
    for (const obj of rendered) {
      const want = JSON.parse(JSON.stringify(obj).replaceAll(PLACEHOLDER_UID, uid));
      if (want.kind === "Secret" && want.metadata.name.endsWith("-curve-cert")) delete want.data;
      const live = await eventually(
        () => env.client.get<Obj>(RESOURCES[want.kind], env.namespace, want.metadata.name),
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      const diff = mismatches(want, live);
      assert.deepEqual(diff, [], `${example}: ${want.kind}/${want.metadata.name}`);
    }
    await env.client.delete(MiniClusters, env.namespace, mc.metadata!.name!);
  }
}, { timeoutMs: 180_000 });
