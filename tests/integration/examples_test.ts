/**
 * The shipped YAML on a real kube-apiserver: every document of every example of examples/ is
 * accepted (server-side dry run: the CRD's schema, CEL rules and defaults, and the admission of the
 * API server and its webhooks) and its MiniClusters, as the API server would store them, pass the
 * operator's own validation; the generated install file applies (server-side dry run) without Pod
 * Security warnings. Documents of an API the server does not serve (Kueue's, on a control plane
 * without Kueue) are left out and named; where Kueue is installed (MC_KUEUE=1, `./task test`)
 * they must be served. tests/unit/examples_test.ts renders the same files without a server.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, stringify } from "yaml";
import { type MiniCluster, validateSpec } from "../../api/mod.ts";
import { isAlreadyExists } from "../../runtime/client/errors.ts";
import { Namespaces } from "../../runtime/client/resources.ts";
import { exampleDocs, exampleFiles, isMiniCluster, type KubeDoc } from "../../testing/examples.ts";
import { eventually, integrationTest, kubectl, type TestEnv } from "../harness.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
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

let served: Promise<Set<string>> | undefined;

/** The group/versions the API server serves (`kubectl api-versions`), asked once per run. */
function servedApis(env: TestEnv): Promise<Set<string>> {
  return served ??= kubectl(env, "api-versions").then((out) =>
    new Set(out.split("\n").map((l) => l.trim()).filter(Boolean))
  );
}

const examples = exampleFiles();

for (const file of examples) {
  integrationTest(`examples: ${file} is accepted by the API server as written`, async (env) => {
    const docs = exampleDocs(file);
    const apis = await servedApis(env);
    const left = docs.filter((d) => !apis.has(d.apiVersion));
    if (Deno.env.get("MC_KUEUE") === "1") {
      assert.deepEqual(left.filter((d) => d.apiVersion.startsWith("kueue.x-k8s.io/")), []);
    }
    if (left.length > 0) {
      console.log(
        `  ${file}: not served here, left out: ` +
          left.map((d) => `${d.apiVersion} ${d.kind}/${d.metadata.name}`).join(", "),
      );
    }
    const sent = docs.filter((d) => apis.has(d.apiVersion));
    assert.ok(sent.some(isMiniCluster), `${file} holds no MiniCluster`);
    const path = await Deno.makeTempFile({ suffix: ".yaml" });
    try {
      await Deno.writeTextFile(path, sent.map((d) => stringify(d)).join("---\n"));
      // Nothing is stored: cluster-wide objects (a PriorityClass, Kueue's queues) stay out of
      // the shared cluster, and what comes back is what the API server would have stored.
      const out = JSON.parse(
        await kubectl(env, "apply", "--server-side", "--dry-run=server", "-o", "json", "-f", path),
      ) as KubeDoc & { items?: KubeDoc[] };
      const stored = out.kind === "List" ? out.items ?? [] : [out];
      assert.deepEqual(
        stored.map((d) => `${d.kind}/${d.metadata.name}`),
        sent.map((d) => `${d.kind}/${d.metadata.name}`),
      );
      for (const doc of stored.filter(isMiniCluster)) {
        const mc = doc as unknown as MiniCluster;
        // With the CRD's defaults applied: the operator must be able to build it too.
        assert.equal(mc.metadata?.namespace, env.namespace);
        assert.deepEqual(validateSpec(mc), [], `${file}: ${mc.metadata?.name}`);
      }
    } finally {
      await Deno.remove(path);
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
