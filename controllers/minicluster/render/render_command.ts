/**
 * `minicluster-operator render -f mc.yaml`: prints, as YAML, the children the operator would
 * create for each MiniCluster of the file (`-f -` reads standard input). A document the API server
 * would refuse gets its messages (api/crd_validation.ts), one it would accept but the operator
 * refuse the SpecInvalid message; the others are still rendered. Exit 1 when any document was
 * refused, 2 on bad arguments.
 */
import { parseArgs } from "node:util";
import type { MiniCluster } from "../../../api/mod.ts";
import { applyErrors, withSchemaDefaults } from "../../../api/crd_validation.ts";
import {
  MINICLUSTER_SCHEMA,
  MINICLUSTER_SPEC_REPLICAS_PATH,
} from "../../../api/minicluster_schema.ts";
import { renderChildren, RenderError } from "./render.ts";

const RENDER_USAGE = `usage: minicluster-operator render -f FILE [--namespace NS] [--with-secrets]
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
  for (const [i, doc] of docs.entries()) {
    // Every problem names its document, so that one bad document among many is found.
    const report = (what: string, message: string) => {
      console.error(`minicluster-operator render: ${what}(document ${i + 1}): ${message}`);
    };
    let obj: MiniCluster | null;
    try {
      if (doc.errors.length > 0) throw doc.errors[0];
      obj = doc.toJS(); // throws on an alias bomb
    } catch (e) {
      // The parser's messages go on with a picture of the place; the first line says what and where.
      report("", (e instanceof Error ? e.message : String(e)).split("\n")[0]);
      failed++;
      continue;
    }
    if (obj === null || obj === undefined) continue;
    const kind = typeof obj === "object" ? `${obj.kind ?? "?"}` : typeof obj;
    const name = typeof obj === "object" ? obj.metadata?.name : undefined;
    const what = `${kind}/${
      typeof name === "string" && /^[\w.-]*$/.test(name) ? name : JSON.stringify(name ?? "?")
    } `;
    if (
      typeof obj !== "object" || obj.kind !== "MiniCluster" ||
      !String(obj.apiVersion).startsWith("flux-framework.org/")
    ) {
      report(what, "not a flux-framework.org MiniCluster");
      failed++;
      continue;
    }
    // What the API server would refuse, in its words; then what the operator would.
    const refused = applyErrors(obj, MINICLUSTER_SCHEMA, MINICLUSTER_SPEC_REPLICAS_PATH);
    if (refused.length > 0) {
      for (const message of refused) report(what, message);
      failed++;
      continue;
    }
    try {
      // As the API server stores it (defaults filled in, nulls dropped), as the operator sees it.
      const stored = withSchemaDefaults(obj, MINICLUSTER_SCHEMA) as MiniCluster;
      const children = await renderChildren(stored, {
        namespace: values.namespace,
        withSecrets: values["with-secrets"],
      });
      out.push(...children.map((c) => stringify(c, { lineWidth: 0 })));
    } catch (e) {
      report(what, e instanceof RenderError ? e.message : `internal error: ${e}`);
      failed++;
    }
  }
  if (out.length > 0) console.log(out.join("---\n").trimEnd());
  return failed > 0 ? 1 : 0;
}
