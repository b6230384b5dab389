/**
 * `minicluster-operator render -f mc.yaml`: prints, as YAML, the children the operator would
 * create for each MiniCluster of the file (`-f -` reads standard input). Exit 1 with the
 * operator's own message when a MiniCluster is invalid, 2 on bad arguments.
 */
import { parseArgs } from "node:util";
import type { MiniCluster } from "../../api/mod.ts";
import { renderChildren, RenderError } from "./render.ts";

export const RENDER_USAGE =
  `usage: minicluster-operator render -f FILE [--namespace NS] [--with-secrets]
  -f, --filename FILE   MiniCluster manifest(s), YAML or JSON; - reads standard input
  -n, --namespace NS    namespace of MiniClusters that name none (default: default)
  --with-secrets        generate a real CURVE certificate instead of a placeholder`;

async function readInput(file: string): Promise<string> {
  if (file !== "-") return await Deno.readTextFile(file);
  return await new Response(Deno.stdin.readable).text();
}

export async function renderCommand(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        filename: { type: "string", short: "f" },
        namespace: { type: "string", short: "n" },
        "with-secrets": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (e) {
    console.error(`minicluster-operator render: ${(e as Error).message}\n${RENDER_USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(RENDER_USAGE);
    return 0;
  }
  if (!values.filename) {
    console.error(`minicluster-operator render: -f is required\n${RENDER_USAGE}`);
    return 2;
  }
  // The YAML parser is loaded only here: the operator itself never needs it (memory).
  const { parseAllDocuments, stringify } = await import("yaml");
  const docs = parseAllDocuments(await readInput(values.filename));
  const out: string[] = [];
  let failed = 0;
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      console.error(`minicluster-operator render: ${doc.errors[0].message}`);
      return 1;
    }
    const obj = doc.toJS() as MiniCluster | null;
    if (!obj) continue;
    const name = `${obj.kind ?? "?"}/${obj.metadata?.name ?? "?"}`;
    if (obj.kind !== "MiniCluster" || !obj.apiVersion?.startsWith("flux-framework.org/")) {
      console.error(`minicluster-operator render: ${name}: not a flux-framework.org MiniCluster`);
      failed++;
      continue;
    }
    try {
      const children = await renderChildren(obj, {
        namespace: values.namespace,
        withSecrets: values["with-secrets"],
      });
      out.push(...children.map((c) => stringify(c, { lineWidth: 0 })));
    } catch (e) {
      if (!(e instanceof RenderError)) throw e;
      console.error(`minicluster-operator render: ${name}: ${e.message}`);
      failed++;
    }
  }
  if (out.length > 0) console.log(out.join("---\n").trimEnd());
  return failed > 0 ? 1 : 0;
}
