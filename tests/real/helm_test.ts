// The Helm chart installed the way users install it, on the real node with the local operator
// image: a second release (its own namespace, names and Lease) that watches one namespace and
// reconciles a MiniCluster there whose Flux really runs.

import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { ensureBinaries } from "../../hack/cluster/binaries.ts";
import { CHART_DIR } from "../../hack/chart.ts";
import { REAL_NODE_LABEL } from "../../hack/cluster/real_node_config.ts";
import { eventually } from "../harness.ts";
import { kubectl, podsReport, realMiniCluster, realNodesAvailable } from "./env.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const RELEASE = "mc-helm";
const RELEASE_NAMESPACE = "mc-helm-system";
const WATCHED = "mc-real-helm";

async function helm(args: string[]): Promise<string> {
  const bin = join(await ensureBinaries(["helm"]), "helm");
  const kubeconfig = Deno.env.get("MC_KUBECONFIG") ?? join(ROOT, ".cluster", "kubeconfig");
  const out = await new Deno.Command(bin, {
    args: ["--kubeconfig", kubeconfig, ...args],
    env: { HELM_CACHE_HOME: "/tmp/helm-cache", HELM_CONFIG_HOME: "/tmp/helm-config" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  if (!out.success) throw new Error(`helm ${args.join(" ")}: ${text(out.stderr)}`);
  return text(out.stdout);
}

Deno.test({
  name: "real: the Helm chart installs the operator, which runs a MiniCluster of its namespace",
  ignore: !realNodesAvailable(),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await helm(["uninstall", RELEASE, "-n", RELEASE_NAMESPACE, "--wait"]).catch(() => "");
    await kubectl(["create", "namespace", WATCHED]).catch(() => "");
    try {
      await helm([
        "install",
        RELEASE,
        join(ROOT, CHART_DIR),
        "--namespace",
        RELEASE_NAMESPACE,
        "--create-namespace",
        "--set",
        `watchNamespaces={${WATCHED}}`,
        "--set-string",
        `nodeSelector.${REAL_NODE_LABEL.replaceAll(".", "\\.")}=true`,
        "--set",
        `tolerations[0].key=${REAL_NODE_LABEL}`,
        "--set",
        "tolerations[0].operator=Exists",
        "--set",
        "tolerations[0].effect=NoSchedule",
        "--wait",
        "--timeout=180s",
      ]).catch(async (e) => {
        throw new Error(`${e.message}\n${await podsReport(RELEASE_NAMESPACE)}`);
      });
      const lease = await eventually(async () => {
        const l = JSON.parse(
          await kubectl(["-n", RELEASE_NAMESPACE, "get", "lease", RELEASE, "-o", "json"]),
        );
        if (!l.spec?.holderIdentity) throw new Error("no holder yet");
        return l;
      }, { timeoutMs: 60_000, intervalMs: 500 });
      assert.match(lease.spec.holderIdentity, new RegExp(`^${RELEASE}-`));

      const mc = realMiniCluster("from-helm", { size: 2 }, {
        launcher: true,
        command: "flux resource list",
      });
      mc.metadata!.namespace = WATCHED;
      await kubectl(["apply", "-f", "-"], { stdin: stringify(mc) });
      await eventually(async () => {
        const got = JSON.parse(
          await kubectl(["-n", WATCHED, "get", "minicluster", "from-helm", "-o", "json"]),
        );
        const done = got.status?.conditions?.find((c: { type: string }) => c.type === "Succeeded");
        if (done?.status !== "True") throw new Error(`not Succeeded: ${JSON.stringify(done)}`);
      }, { timeoutMs: 180_000, intervalMs: 1000 });
      const log = await kubectl([
        "-n",
        WATCHED,
        "logs",
        "-l",
        "job-name=from-helm,batch.kubernetes.io/job-completion-index=0",
        "--tail=-1",
      ]);
      assert.match(log, /free\s+2\s/, log);
    } finally {
      // The MiniCluster first, while the operator still may: deleting the namespace also deletes
      // the RoleBinding that lets the operator remove its finalizer there.
      await kubectl(["-n", WATCHED, "delete", "minicluster", "--all", "--wait=true"]).catch(() =>
        ""
      );
      await kubectl(["delete", "namespace", WATCHED, "--wait=true"]).catch(() => "");
      await helm(["uninstall", RELEASE, "-n", RELEASE_NAMESPACE, "--wait"]).catch(() => "");
      await kubectl(["delete", "namespace", RELEASE_NAMESPACE, "--wait=false"]).catch(() => "");
    }
  },
});
