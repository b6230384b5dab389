// Helm charts that ship inside a Go module (Kueue's, metrics-server's, KEDA's): the module is in
// the module cache once its binary was built (hack/build-binaries.sh), so the chart and the binary
// come from one version and cannot disagree. Rendered with the Helm built from its module.

import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { ensureBinaries } from "./binaries.ts";

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
    return parseAllDocuments(new TextDecoder().decode(out.stdout))
      .map((d) => d.toJSON() as Record<string, unknown> | null)
      .filter((o): o is Record<string, unknown> => o !== null);
  } finally {
    await Deno.remove(valuesFile);
  }
}
