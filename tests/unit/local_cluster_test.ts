// Pure parts of the local cluster tooling (hack/cluster/) and the test harness.

import assert from "node:assert/strict";
import { parse, parseAllDocuments } from "yaml";
import {
  apiserverArgs,
  type ComponentContext,
  controllerManagerArgs,
  kwokArgs,
} from "../../hack/cluster/components.ts";
import { renderKubeconfig } from "../../hack/cluster/kubeconfig.ts";
import {
  COMPLETE_AFTER_ANNOTATION,
  KEEP_RUNNING_ANNOTATION,
  podStages,
  renderKwokConfig,
} from "../../hack/cluster/kwok_stages.ts";
import { fakeNode } from "../../hack/cluster/nodes.ts";
import { pkiFiles } from "../../hack/cluster/pki.ts";
import { isRunning, spawnDaemon, stopGroups } from "../../hack/cluster/processes.ts";
import { parseDenoTestSummary } from "../../hack/test.ts";
import { namespaceSlug, testNamespaceName } from "../harness.ts";

const ctx: ComponentContext = {
  bin: (n) => `/bin/${n}`,
  ports: {
    etcdClient: 1001,
    etcdPeer: 1002,
    apiserver: 1003,
    controllerManager: 1004,
    scheduler: 1005,
  },
  pki: pkiFiles("/state/pki"),
  kubeconfig: "/state/kubeconfig",
  etcdDataDir: "/state/etcd",
  kwokConfig: "/state/kwok.yaml",
  realNodes: false,
};

Deno.test("apiserver: TLS on its port, RBAC+Node, service accounts signed with our key", () => {
  const args = apiserverArgs(ctx);
  assert.ok(args.includes("--secure-port=1003"));
  assert.ok(args.includes("--etcd-servers=http://127.0.0.1:1001"));
  assert.ok(args.includes("--authorization-mode=RBAC,Node"));
  assert.ok(args.includes("--client-ca-file=/state/pki/ca.crt"));
  assert.ok(args.includes("--service-account-signing-key-file=/state/pki/sa.key"));
});

Deno.test("controller manager runs the Job, GC, namespace and token controllers", () => {
  const args = controllerManagerArgs(ctx);
  const controllers = args.find((a) => a.startsWith("--controllers="))!.split("=")[1].split(",");
  for (
    const c of [
      "job-controller",
      "garbage-collector-controller",
      "namespace-controller",
      "serviceaccount-token-controller",
    ]
  ) assert.ok(controllers.includes(c), c);
  assert.ok(args.includes("--use-service-account-credentials=true"));
  assert.ok(args.includes("--root-ca-file=/state/pki/ca.crt"));
});

Deno.test("KWOK manages exactly the nodes annotated as fake", () => {
  const args = kwokArgs(ctx);
  assert.ok(args.includes("--manage-all-nodes=false"));
  assert.ok(args.includes("--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"));
  const node = fakeNode(2) as { metadata: { name: string; annotations: Record<string, string> } };
  assert.equal(node.metadata.name, "kwok-node-2");
  assert.equal(node.metadata.annotations["kwok.x-k8s.io/node"], "fake");
});

Deno.test("KWOK config: four pod Stages; completion honours keep-running and complete-after", () => {
  const docs = parseAllDocuments(renderKwokConfig()).map((d) => d.toJS());
  assert.deepEqual(docs.map((d) => d.metadata.name), [
    "pod-ready",
    "pod-complete",
    "pod-fail",
    "pod-delete",
  ]);
  assert.ok(docs.every((d) => d.kind === "Stage" && d.spec.resourceRef.kind === "Pod"));
  const complete = podStages()[1] as {
    spec: {
      selector: { matchExpressions: { key: string; values?: string[] }[] };
      delay: { durationFrom: { expressionFrom: string } };
    };
  };
  const keys = complete.spec.selector.matchExpressions.map((e) => e.key);
  assert.ok(keys.includes(`.metadata.annotations["${KEEP_RUNNING_ANNOTATION}"]`));
  assert.ok(keys.includes(".metadata.ownerReferences.[].kind"));
  assert.equal(
    complete.spec.delay.durationFrom.expressionFrom,
    `.metadata.annotations["${COMPLETE_AFTER_ANNOTATION}"]`,
  );
});

Deno.test("kubeconfig embeds the CA and the client certificate", () => {
  const cfg = parse(renderKubeconfig({
    server: "https://127.0.0.1:1003",
    caCertPem: "CA",
    clientCertPem: "CERT",
    clientKeyPem: "KEY",
  }));
  assert.equal(cfg.clusters[0].cluster.server, "https://127.0.0.1:1003");
  assert.equal(atob(cfg.clusters[0].cluster["certificate-authority-data"]), "CA");
  assert.equal(atob(cfg.users[0].user["client-certificate-data"]), "CERT");
  assert.equal(atob(cfg.users[0].user["client-key-data"]), "KEY");
  assert.equal(cfg["current-context"], cfg.contexts[0].name);
});

Deno.test("deno test summary: counts from the last summary line, colours ignored", () => {
  const out = "running 3 tests\n...\n\x1b[0m\x1b[32mok\x1b[0m | 12 passed (3 steps) | 0 failed " +
    "| 2 ignored (1s)\n";
  assert.deepEqual(parseDenoTestSummary(out), { passed: 12, failed: 0 });
  assert.deepEqual(parseDenoTestSummary("FAILED | 4 passed | 2 failed (9s)"), {
    passed: 4,
    failed: 2,
  });
  assert.equal(parseDenoTestSummary("error: Type checking failed."), undefined);
});

Deno.test("test namespaces are valid DNS labels of at most 63 characters", () => {
  assert.equal(namespaceSlug("Reconcile creates the Job!"), "reconcile-creates-the-job");
  assert.equal(namespaceSlug("***"), "test");
  for (const name of ["x", "A very long test name ".repeat(10), "ünïcode ✓ test"]) {
    const ns = testNamespaceName(name);
    assert.ok(ns.length <= 63, ns);
    assert.match(ns, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  }
});

Deno.test("daemons: a spawned daemon runs under its binary's name until its group is stopped", async () => {
  const dir = await Deno.makeTempDir();
  const pid = spawnDaemon({ binary: "/bin/sleep", args: ["30"], logFile: `${dir}/log` });
  try {
    assert.ok(isRunning(pid, "/bin/sleep"), "running from the first moment (shim or binary)");
    // Once sleep has replaced the shim (an empty cmdline mid-exec counts as running whatever the
    // binary), another binary under this pid is not ours.
    const argv0 = () => Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0")[0];
    for (let i = 0; i < 200 && argv0() !== "/bin/sleep"; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(argv0(), "/bin/sleep");
    assert.ok(isRunning(pid, "/bin/sleep"));
    assert.ok(!isRunning(pid, "/bin/cat"), "another binary under this pid is not ours");
    await stopGroups([pid]);
    assert.ok(!isRunning(pid, "/bin/sleep"), "gone (or a zombie) once stopped");
  } finally {
    await stopGroups([pid]);
    await Deno.remove(dir, { recursive: true });
  }
});
