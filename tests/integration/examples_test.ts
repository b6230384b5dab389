/**
 * The shipped YAML on a real kube-apiserver: every example of examples/ is accepted as written
 * (CRD schema and CEL rules) and passes the operator's own validation, and the generated install
 * file applies (server-side dry run) without Pod Security warnings.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { type MiniCluster, validateSpec } from "../../api/mod.ts";
import { isAlreadyExists } from "../../runtime/client/errors.ts";
import { Namespaces } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import { eventually, integrationTest, kubectl } from "../harness.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const EXAMPLES = `${ROOT}examples/`;
const INSTALL = `${ROOT}deploy/install.yaml`;
const OPERATOR_NAMESPACE = "minicluster-system";

interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
}

function docsOf(path: string): Doc[] {
  return parseAllDocuments(Deno.readTextFileSync(path)).map((d) => d.toJS()).filter(Boolean);
}

const examples = [...Deno.readDirSync(EXAMPLES)]
  .filter((e) => e.isFile && e.name.endsWith(".yaml"))
  .map((e) => e.name)
  .sort();

Deno.test("examples: the common cases are all there", () => {
  for (
    const name of [
      "hello-world",
      "batch",
      "interactive",
      "services",
      "volumes",
      "elasticity",
      "minimal-service",
      "queueing",
    ]
  ) assert.ok(examples.includes(`${name}.yaml`), `examples/${name}.yaml is missing`);
});

for (const file of examples) {
  integrationTest(`examples: ${file} is accepted by the API server as written`, async (env) => {
    const path = `${EXAMPLES}${file}`;
    const out = await kubectl(env, "apply", "--server-side", "-f", path);
    const miniClusters = docsOf(path).filter((d) => d.kind === "MiniCluster");
    assert.ok(miniClusters.length > 0, `${file} holds no MiniCluster`);
    for (const doc of miniClusters) {
      assert.match(out, new RegExp(`minicluster.flux-framework.org/${doc.metadata.name}`));
      // Read back with the CRD's defaults applied: the operator must be able to build it too.
      const stored = await env.client.get<MiniCluster>(
        MiniClusters,
        env.namespace,
        doc.metadata.name,
      );
      assert.deepEqual(validateSpec(stored), [], `${file}: ${doc.metadata.name}`);
    }
  });
}

integrationTest(
  "install: deploy/install.yaml applies (server-side dry run) without Pod Security warnings",
  async (env) => {
    const docs = docsOf(INSTALL);
    const kinds = docs.map((d) => d.kind);
    for (
      const kind of [
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
      ]
    ) assert.ok(kinds.includes(kind), `install.yaml has no ${kind}`);
    // A dry run does not create the namespace, and the objects in it need one: create it as the
    // install file describes it (so its Pod Security labels apply). It is left in place: without
    // a controller manager (a control-plane-only cluster) a deleted namespace never finishes
    // terminating, and a later run could not create it again.
    const namespace = docs.find((d) => d.kind === "Namespace")!;
    assert.equal(namespace.metadata.name, OPERATOR_NAMESPACE);
    await eventually(async () => {
      try {
        await env.client.create(Namespaces, namespace);
      } catch (e) {
        if (!isAlreadyExists(e)) throw e;
        const live = await env.client.get<Doc & { metadata: { deletionTimestamp?: string } }>(
          Namespaces,
          undefined,
          OPERATOR_NAMESPACE,
        );
        if (live.metadata.deletionTimestamp) {
          throw new Error(`namespace ${OPERATOR_NAMESPACE} is terminating`);
        }
      }
    }, { timeoutMs: 60_000, intervalMs: 500 });
    const result = await new Deno.Command("kubectl", {
      args: [
        "--kubeconfig",
        env.kubeconfig,
        "apply",
        "--server-side",
        "--dry-run=server",
        // The live CRD may have other field managers (the harness, a demo); a dry run takes no
        // ownership, and what it checks is that every object is accepted.
        "--force-conflicts",
        "-f",
        INSTALL,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(result.stdout);
    const stderr = new TextDecoder().decode(result.stderr);
    assert.ok(result.success, `kubectl apply --dry-run=server failed:\n${stderr}`);
    assert.doesNotMatch(stderr, /PodSecurity|violate/i, stderr);
    for (const doc of docs) {
      assert.match(stdout, new RegExp(`/${doc.metadata.name} (serverside-applied|unchanged)`));
    }
  },
);
