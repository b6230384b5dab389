// Pure parts of the local cluster tooling (hack/cluster/) and the test harness.

import assert from "node:assert/strict";
import { parse, parseAllDocuments } from "yaml";
import {
  apiserverArgs,
  type ComponentContext,
  controllerManagerArgs,
  kwokArgs,
  schedulerArgs,
} from "../../hack/cluster/components.ts";
import { renderKubeconfig } from "../../hack/cluster/kubeconfig.ts";
import { parseKubernetesVersion } from "../../hack/cluster/kubernetes_version.ts";
import {
  COMPLETE_AFTER_ANNOTATION,
  KEEP_RUNNING_ANNOTATION,
  podStages,
  renderKwokConfig,
} from "../../hack/cluster/kwok_stages.ts";
import { fakeNode } from "../../hack/cluster/nodes.ts";
import { pkiFiles } from "../../hack/cluster/pki.ts";
import { down, realNodesFor, recordedGroups, startRecorded } from "../../hack/cluster/lifecycle.ts";
import {
  describeProcess,
  ExitWatch,
  groupMembers,
  isRunning,
  spawnDaemon,
  stopGroups,
} from "../../hack/cluster/processes.ts";
import { parseDenoTestFailures, parseDenoTestSummary } from "../../hack/test.ts";
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
  kubernetesVersion: "v1.37.2",
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

Deno.test("1.37: Workload gates on the apiserver, controller manager and scheduler", () => {
  const gates = "--feature-gates=GenericWorkload=true,WorkloadWithJob=true";
  const api = apiserverArgs(ctx);
  assert.ok(api.includes(gates));
  assert.ok(api.includes("--runtime-config=scheduling.k8s.io/v1beta1=true"));
  const cm = controllerManagerArgs(ctx);
  assert.ok(cm.includes(gates));
  const controllers = cm.find((a) => a.startsWith("--controllers="))!.split("=")[1].split(",");
  assert.ok(controllers.includes("podgroup-protection-controller"));
  assert.ok(schedulerArgs(ctx).includes(gates));
});

Deno.test("1.33 and 1.36: no gate, API version or controller those binaries would refuse", () => {
  for (const kubernetesVersion of ["v1.33.13", "v1.36.3"]) {
    const old = { ...ctx, kubernetesVersion };
    const all = [...apiserverArgs(old), ...controllerManagerArgs(old), ...schedulerArgs(old)];
    assert.ok(!all.some((a) => a.startsWith("--feature-gates")), kubernetesVersion);
    assert.ok(!all.some((a) => a.startsWith("--runtime-config")), kubernetesVersion);
    assert.ok(!all.some((a) => a.includes("podgroup")), kubernetesVersion);
  }
});

Deno.test("Kubernetes version: read from --version output", () => {
  assert.deepEqual(parseKubernetesVersion("Kubernetes v1.37.2\n"), {
    major: 1,
    minor: 37,
    text: "v1.37.2",
  });
  assert.equal(parseKubernetesVersion("v1.33.13").minor, 33);
  assert.throws(() => parseKubernetesVersion("Kubernetes"), /not a Kubernetes version/);
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

Deno.test("deno test failures: each failed test and step is named with its error's first lines", async () => {
  const dir = await Deno.makeTempDir({ prefix: "failures-" });
  try {
    await Deno.writeTextFile(
      `${dir}/sample_test.ts`,
      `Deno.test("passes", () => {});
Deno.test("fails", () => { throw new Error("boom"); });
Deno.test("has steps", async (t) => {
  await t.step("inner", () => { throw new Error("inner boom"); });
});
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["test", "--no-config", `${dir}/sample_test.ts`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const failures = parseDenoTestFailures(new TextDecoder().decode(out.stdout));
    assert.equal(failures.length, 2, failures.join("\n"));
    assert.match(failures[0], /^fails => .*sample_test\.ts:2:6\n {4}error: Error: boom/);
    assert.match(failures[1], /^has steps \.\.\. inner => .*\n {4}error: Error: inner boom/);
    assert.deepEqual(parseDenoTestFailures("ok | 3 passed | 0 failed (1s)"), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cluster up: an add-on without a real node adds one, a control plane alone refuses", () => {
  const up = { dir: "/tmp/x", mode: "full" as const, nodes: 4 };
  assert.equal(realNodesFor({ ...up, kueue: true }, 0), 1);
  assert.equal(realNodesFor({ ...up, metrics: true, keda: true }, 0), 1);
  assert.equal(realNodesFor({ ...up, kueue: true, realNodes: 2 }, 0), 2);
  assert.equal(realNodesFor({ ...up, kueue: true }, 2), 0, "the running cluster's real nodes do");
  assert.equal(realNodesFor(up, 0), 0);
  assert.throws(
    () => realNodesFor({ ...up, mode: "control-plane-only", kueue: true }, 0),
    /--kueue needs a real node, which --control-plane-only has not/,
  );
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

Deno.test("daemons: ExitWatch believes an exit seen on two polls in a row, from the first moment on", async () => {
  const dir = await Deno.makeTempDir();
  const pid = spawnDaemon({ binary: "/bin/sleep", args: ["30"], logFile: `${dir}/log` });
  const watch = new ExitWatch();
  try {
    // Polled through the shim, the exec and the binary: never an exit while it lives.
    for (let i = 0; i < 50; i++) {
      assert.ok(!watch.exited(pid), `poll ${i}: ${describeProcess(pid)}`);
      assert.equal(watch.exitSeen(pid), undefined, `poll ${i}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    assert.match(
      describeProcess(pid),
      new RegExp(`^pid ${pid}: state [RSD], running /bin/sleep 30$`),
    );
    await stopGroups([pid]);
    assert.ok(!watch.exited(pid), "one poll that misses it is not yet an exit");
    assert.ok(watch.exited(pid), "the second in a row is");
    assert.match(describeProcess(pid), /no such process|state Z/);
    assert.match(watch.exitSeen(pid) ?? "", new RegExp(`^pid ${pid}: (no such process|state Z)`));
    assert.equal(new ExitWatch().exitSeen(undefined), "never started");
  } finally {
    await stopGroups([pid]);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("down: stops the process groups recorded in the state dir (the demo's operator)", async () => {
  const dir = await Deno.makeTempDir();
  const spare = await Deno.makeTempDir();
  const started: number[] = [];
  try {
    // As the demo starts its operator: a daemon in its own session, recorded as operator.pid. A
    // child of it (same process group) must go too.
    const pid = await startRecorded(dir, "operator", {
      binary: "/bin/sh",
      args: ["-c", "sleep 300 & wait"],
      logFile: `${dir}/operator.log`,
    });
    started.push(pid);
    assert.equal(Deno.readTextFileSync(`${dir}/operator.pid`).split("\n")[0], String(pid));
    assert.deepEqual(recordedGroups(dir), [pid]);
    for (let i = 0; i < 200 && groupMembers(pid).length < 2; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(groupMembers(pid).length, 2, "sh and its sleep");

    // A record whose pid now names another process (another start time) is not ours: left alone.
    const other = spawnDaemon({ binary: "/bin/sleep", args: ["300"], logFile: `${spare}/log` });
    started.push(other);
    Deno.writeTextFileSync(`${dir}/stale.pid`, `${other}\n1\n`);
    // A bare pid (an older demo's record) counts only if the process names the cluster's dir.
    Deno.writeTextFileSync(`${dir}/bare.pid`, `${other}\n`);
    assert.deepEqual(recordedGroups(dir), [pid]);
    const legacy = spawnDaemon({
      binary: "/bin/sh",
      args: ["-c", "sleep 300 & wait", `${dir}/kubeconfig`],
      logFile: `${spare}/log`,
    });
    started.push(legacy);
    Deno.writeTextFileSync(`${dir}/legacy.pid`, `${legacy}\n`);
    // Until the shim has exec'd sh and sh has started its sleep: the shim's command line names
    // the dir too, but during the exec it reads empty, so a check that saw the shim may not see
    // the same process a moment later.
    for (let i = 0; i < 200 && groupMembers(legacy).length < 2; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual(recordedGroups(dir).sort(), [pid, legacy].sort());
    // A component's pid from a session whose processes have since gone, given by the kernel to a
    // process that does not name the cluster's dir: not ours either.
    Deno.writeTextFileSync(`${dir}/state.json`, JSON.stringify({ pids: { etcd: other } }));

    await down(dir, { quiet: true });
    assert.deepEqual(groupMembers(pid), [], "the recorded group is gone");
    assert.deepEqual(groupMembers(legacy), [], "so is the one of the bare record");
    assert.ok(await Deno.stat(dir).then(() => false, () => true), "the state dir is removed");
    assert.ok(groupMembers(other).length > 0, "an unrelated process survives");
  } finally {
    await stopGroups(started);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await Deno.remove(spare, { recursive: true });
  }
});

Deno.test("startRecorded: a second start of the same name stops the first", async () => {
  const dir = await Deno.makeTempDir();
  const spec = { binary: "/bin/sleep", args: ["300"], logFile: `${dir}/log` };
  const started: number[] = [];
  try {
    started.push(await startRecorded(dir, "operator", spec));
    started.push(await startRecorded(dir, "operator", spec));
    assert.deepEqual(groupMembers(started[0]), []);
    assert.deepEqual(recordedGroups(dir), [started[1]]);
  } finally {
    await stopGroups(started);
    await Deno.remove(dir, { recursive: true });
  }
});
