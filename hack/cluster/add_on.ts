// What installing an add-on of the local cluster (Kueue, metrics-server, KEDA) takes: its
// manifests from the Go module its binaries were built from (hack/build-binaries.sh; the module is
// then in the module cache, so the manifests and the binaries come from one version and cannot
// disagree), Helm charts rendered with the Helm built from its module, the objects applied, and a
// wait until the add-on answers as it must.

import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { ensureBinaries } from "./binaries.ts";
import { REAL_NODE_LABEL } from "./real_node_config.ts";
import { kubectl } from "../kubectl.ts";

/** The directory of `module@version` in the module cache (downloaded when missing). */
export async function moduleDir(module: string, version: string): Promise<string> {
  const out = await new Deno.Command("go", {
    args: ["mod", "download", "-json", `${module}@${version}`],
    env: { GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`go mod download ${module}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return (JSON.parse(new TextDecoder().decode(out.stdout)) as { Dir: string }).Dir;
}

/** The objects of a YAML stream (`helm template`, `kubectl kustomize`), empty documents left out. */
export function parseObjects(yaml: string): Record<string, unknown>[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJSON() as Record<string, unknown> | null)
    .filter((o): o is Record<string, unknown> => o !== null);
}

/**
 * The pod placement of an add-on: on the real node `node`, whose taint it tolerates. `up` picks
 * the last real node: the first is where the disruption tests restart the kubelet and containerd.
 */
export function onRealNode(node: string): {
  nodeSelector: Record<string, string>;
  tolerations: Record<string, string>[];
} {
  return {
    nodeSelector: { [REAL_NODE_LABEL]: "true", "kubernetes.io/hostname": node },
    tolerations: [{ key: REAL_NODE_LABEL, operator: "Exists", effect: "NoSchedule" }],
  };
}

/** `helm template <release> <chart>` with `values`: the chart's objects, parsed. */
export async function renderChart(
  release: string,
  chart: string,
  namespace: string,
  values: Record<string, unknown>,
): Promise<Record<string, unknown>[]> {
  const binDir = await ensureBinaries(["helm"]);
  const valuesFile = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(valuesFile, stringify(values));
    const out = await new Deno.Command(join(binDir, "helm"), {
      args: ["template", release, chart, `--namespace=${namespace}`, `--values=${valuesFile}`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(`helm template: ${new TextDecoder().decode(out.stderr)}`);
    return parseObjects(new TextDecoder().decode(out.stdout));
  } finally {
    await Deno.remove(valuesFile);
  }
}

/** Applies `objects` server-side (CRDs are too large for the last-applied annotation). */
export async function applyServerSide(
  kubeconfig: string,
  objects: readonly Record<string, unknown>[],
): Promise<void> {
  await kubectl(
    kubeconfig,
    [
      "apply",
      "--server-side",
      "--force-conflicts",
      "--field-manager=minicluster-cluster",
      "-f",
      "-",
    ],
    objects.map((o) => JSON.stringify(o)).join("\n"),
  );
}

/**
 * Calls `check` every 2 s until it returns undefined (done) or `timeoutMs` passes; then throws
 * with `what` and the last reason `check` gave (or the error it threw).
 */
export async function waitUntil(
  what: string,
  check: () => Promise<string | undefined>,
  timeoutMs = 180_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const reason = await check();
      if (reason === undefined) return;
      last = reason;
    } catch (e) {
      last = e instanceof Error ? e.message : String(e);
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
  throw new Error(`${what} in ${Math.round(timeoutMs / 1000)} s: ${last.trim()}`);
}
