// Upgrade: the previous release's operator (0.1.0, run from its commit extracted to a temporary
// directory) runs two MiniClusters; it is stopped, this checkout's CRDs are applied over its CRDs
// and this checkout's operator started, as docs/operations.md#upgrade says. No pod restarts or is
// replaced, every child keeps its uid, and the children rewritten are exactly those the Upgrade
// section says a new version rewrites: none, while the two versions build the same children.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { MiniClusters } from "../../api/resource.ts";
import { MiniClusterWorkspaces } from "../../api/workspace.ts";
import {
  ConfigMaps,
  Jobs,
  Pods,
  type ResourceType,
  Secrets,
  Services,
} from "../../runtime/client/resources.ts";
import { groupBy, sumOf, WRITE_VERBS } from "../../testing/metrics_text.ts";
import type { OperatorProcess } from "../../testing/operator_process.ts";
import { kubectl, type TestEnv } from "../harness.ts";
import {
  conditionOf,
  e2eTest,
  eventually,
  getMiniCluster,
  heldStill,
  KEEP_RUNNING,
  miniCluster,
  waitForCondition,
  waitForRunningPods,
} from "./env.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** Release 0.1.0: the commit of the previous release, read from this repository's history. */
const PREVIOUS_RELEASE = "c1501adec04fc3290efb5f29b65bf9c46b6436b9";

/** Extracts `commit` of this repository into a fresh temporary directory; resolves the directory. */
async function extract(commit: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "minicluster-release-" });
  globalThis.addEventListener("unload", () => {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch {
      // already gone
    }
  });
  const out = await new Deno.Command("sh", {
    args: ["-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", ROOT, commit, dir],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`extracting ${commit}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return dir;
}

interface Seen {
  uid: string;
  resourceVersion: string;
  /** Pods: the sum of their containers' restart counts. */
  restarts?: number;
}

const CHILD_KINDS: [string, ResourceType][] = [
  ["Job", Jobs],
  ["Pod", Pods],
  ["Service", Services],
  ["Secret", Secrets],
  ["ConfigMap", ConfigMaps],
  ["MiniClusterWorkspace", MiniClusterWorkspaces],
];

/** Every object of the namespace a MiniCluster owns or runs, by "Kind/name". */
async function snapshot(env: TestEnv): Promise<Map<string, Seen>> {
  const out = new Map<string, Seen>();
  for (const [kind, rt] of CHILD_KINDS) {
    const list = await env.client.list<Pod>(rt, { namespace: env.namespace });
    for (const o of list.items) {
      const name = o.metadata?.name ?? "";
      if (kind === "ConfigMap" && name === "kube-root-ca.crt") continue;
      const seen: Seen = { uid: o.metadata!.uid!, resourceVersion: o.metadata!.resourceVersion! };
      if (kind === "Pod") {
        seen.restarts = (o.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0);
      }
      out.set(`${kind}/${name}`, seen);
    }
  }
  return out;
}

/** The children's snapshot and the MiniClusters' resourceVersions. */
async function settledState(
  env: TestEnv,
): Promise<{ children: Map<string, Seen>; miniClusters: Map<string, string> }> {
  const miniClusters = new Map<string, string>();
  for (const name of NAMES) {
    miniClusters.set(name, (await getMiniCluster(env, name)).metadata!.resourceVersion!);
  }
  return { children: await snapshot(env), miniClusters };
}

async function reconciles(op: OperatorProcess): Promise<number> {
  return sumOf(await op.metrics(), "reconcile_total", { controller: "minicluster" });
}

async function writesByResource(op: OperatorProcess): Promise<Record<string, number>> {
  const samples = (await op.metrics()).filter((s) =>
    s.name === "api_requests_total" && WRITE_VERBS.includes(s.labels.verb ?? "")
  );
  return groupBy(
    samples.map((s) => ({
      ...s,
      labels: { ...s.labels, key: `${s.labels.verb} ${s.labels.resource}` },
    })),
    "api_requests_total",
    "key",
  );
}

const NAMES = ["plain", "served"];

e2eTest("e2e upgrade: 0.1.0 replaced by this checkout under running MiniClusters", async (env) => {
  const previous = await extract(PREVIOUS_RELEASE);
  await kubectl(env, "apply", "--server-side", "-f", join(previous, "crds"));
  const old = await env.startOperator({ root: previous });

  await env.client.create(
    MiniClusters,
    miniCluster("plain", env.namespace, { size: 2, pod: { annotations: KEEP_RUNNING } }),
  );
  // Per-container Services and a services pod: more kinds of children to carry over.
  await env.client.create(
    MiniClusters,
    miniCluster("served", env.namespace, {
      size: 2,
      pod: { annotations: KEEP_RUNNING },
      containers: [
        { image: "ghcr.io/rse-ops/accounting:app-latest", command: "hostname", runFlux: true },
        { name: "db", image: "postgres", ports: [5432] },
      ],
      services: [{ name: "api", image: "nginx", ports: [80] }],
    }),
  );
  await waitForRunningPods(env, "plain", 2);
  await waitForRunningPods(env, "served", 3); // two Job pods and the services pod
  for (const name of NAMES) await waitForCondition(env, name, "Ready", { status: "True" });
  // The Job controller, KWOK and the old operator's last status write each land on their own
  // time: the snapshot is taken once two of them 3 s apart agree.
  const { children: before, miniClusters: mcBefore } = await heldStill(
    () => settledState(env),
    "the children or the MiniClusters",
  );
  for (const kind of ["Job", "Pod", "Service", "Secret", "ConfigMap", "MiniClusterWorkspace"]) {
    assert.ok([...before.keys()].some((k) => k.startsWith(`${kind}/`)), `no ${kind} before`);
  }

  assert.equal(await old.stop(), 0, "the previous release's operator exits cleanly on SIGTERM");
  await kubectl(env, "apply", "--server-side", "--force-conflicts", "-f", join(ROOT, "crds"));
  const upgradeStart = performance.now();
  const next = await env.startOperator();
  await eventually(async () => assert.ok(await reconciles(next) >= NAMES.length), {
    timeoutMs: 30_000,
    intervalMs: 100,
  });
  const reconciledMs = performance.now() - upgradeStart;
  for (const name of NAMES) {
    await eventually(async () => {
      const mc = await getMiniCluster(env, name);
      const observed = (mc.status as { observedGeneration?: number } | undefined)
        ?.observedGeneration;
      assert.equal(observed, mc.metadata?.generation, `${name}: observedGeneration`);
      assert.equal(conditionOf(mc, "Ready")?.status, "True", `${name}: Ready`);
    }, { timeoutMs: 15_000 });
  }
  // Time for any write the start-up reconciles would make, and for a pod restart to show.
  await new Promise((r) => setTimeout(r, 5000));

  const after = await snapshot(env);
  assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort(), "the same children");
  const rewritten: string[] = [];
  for (const [key, was] of before) {
    const now = after.get(key)!;
    assert.equal(now.uid, was.uid, `${key} was replaced`);
    if (was.restarts !== undefined) assert.equal(now.restarts, was.restarts, `${key} restarted`);
    if (now.resourceVersion !== was.resourceVersion) rewritten.push(key);
  }
  const mcRewritten = [];
  for (const name of NAMES) {
    const mc = await getMiniCluster(env, name);
    assert.equal(conditionOf(mc, "Ready")?.status, "True", `${name}: Ready after the upgrade`);
    if (mc.metadata!.resourceVersion !== mcBefore.get(name)) mcRewritten.push(name);
  }
  const writes = await writesByResource(next);
  console.log(
    `upgrade 0.1.0 -> this checkout: ${before.size} children (${
      [...before.keys()].join(", ")
    }); reconciled both in ${
      Math.round(reconciledMs)
    } ms after the new operator's spawn; ${await reconciles(
      next,
    )} reconciles; children rewritten: ${rewritten.length} [${rewritten.join(", ")}]; ` +
      `MiniClusters rewritten: [${mcRewritten.join(", ")}]; writes: ${JSON.stringify(writes)}`,
  );
  // docs/operations.md#upgrade: a version that builds the same children writes none of them, and
  // `git diff c1501ad.. -- controllers/minicluster/children/` is empty.
  assert.deepEqual(rewritten, [], "children rewritten by the upgrade");
  // Nor does the status change: what the new operator observes is what the old one wrote.
  assert.deepEqual(mcRewritten, [], "MiniClusters rewritten by the upgrade");
  assert.deepEqual(writes, {}, "the new operator's writes");
  await next.stop();
}, { timeoutMs: 240_000 });
