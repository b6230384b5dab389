/**
 * Installs the CRDs of crds/ (hack/crd_files.ts) on a cluster of the demo, a test or a benchmark:
 * server-side applied (idempotent, so every suite of a run may do it) and waited for until
 * Established.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { CRD_FILES } from "../hack/crd_files.ts";
import { KubeClient } from "../runtime/client/client.ts";
import { CustomResourceDefinitions } from "../runtime/client/resources.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const FIELD_MANAGER = "minicluster-tests";

interface Crd {
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string }[] };
}

export async function installCrds(kubeconfig: string, timeoutMs = 60_000): Promise<void> {
  const crds: Crd[] = [];
  for (const file of CRD_FILES) {
    const text = await Deno.readTextFile(join(ROOT, file));
    for (const doc of parseAllDocuments(text)) {
      const obj = doc.toJS();
      if (obj?.kind === "CustomResourceDefinition") crds.push(obj);
    }
  }
  const client = await KubeClient.fromKubeconfig(kubeconfig);
  try {
    for (const crd of crds) {
      await client.apply(CustomResourceDefinitions, crd, {
        fieldManager: FIELD_MANAGER,
        force: true,
      });
    }
    const deadline = Date.now() + timeoutMs;
    for (const crd of crds) {
      for (;;) {
        const got = await client.get<Crd>(CustomResourceDefinitions, undefined, crd.metadata.name);
        if (got.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) {
          break;
        }
        if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} is not Established`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    client.close();
  }
}
