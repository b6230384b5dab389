// The operator-side pod security policy (--pod-security): the Pod Security Standards' checks on the
// pods a MiniCluster would make, and the reconcile that refuses such a MiniCluster as SpecInvalid
// without creating anything.
import assert from "node:assert/strict";
import type { PodSpec } from "kubernetes-types/core/v1.d.ts";
import {
  type JudgedPod,
  parsePodSecurityLevel,
  podSecurityFindings,
  podSecurityViolations,
  priorityViolations,
} from "../../controllers/minicluster/policy/pod_security.ts";
import { parseOptions } from "../../controllers/minicluster/operator_flags.ts";
import { FakeOperator } from "../../testing/fake_operator.ts";

const plain: PodSpec = { containers: [{ name: "c", image: "i" }] };
const hostile: PodSpec = {
  hostPID: true,
  hostIPC: true,
  hostNetwork: true,
  volumes: [{ name: "root", hostPath: { path: "/" } }],
  containers: [{
    name: "c",
    image: "i",
    ports: [{ containerPort: 80, hostPort: 80 }],
    securityContext: { privileged: true, capabilities: { add: ["SYS_ADMIN", "CHOWN"] } },
  }],
};

Deno.test("pod security: privileged checks nothing; baseline names every host-level escape", () => {
  assert.deepEqual(podSecurityViolations({ spec: hostile }, "privileged", "pods"), []);
  assert.deepEqual(podSecurityViolations({ spec: plain }, "baseline", "pods"), []);
  assert.deepEqual(podSecurityViolations({ spec: hostile }, "baseline", "pods"), [
    "pods: hostNetwork is true",
    "pods: hostPID is true",
    "pods: hostIPC is true",
    'pods: volume "root" is a hostPath (/)',
    'pods: container "c" is privileged',
    'pods: container "c" adds capabilities SYS_ADMIN',
    'pods: container "c" uses hostPort 80',
  ]);
});

Deno.test("pod security: restricted also wants non-root, no escalation, seccomp, drop ALL", () => {
  const problems = podSecurityViolations({ spec: plain }, "restricted", "pods");
  assert.deepEqual(problems, [
    'pods: container "c" must set allowPrivilegeEscalation false',
    'pods: container "c" must set runAsNonRoot true',
    'pods: container "c" must set seccompProfile RuntimeDefault or Localhost',
    'pods: container "c" must drop capability ALL',
  ]);
  const tight: PodSpec = {
    securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
    volumes: [{ name: "d", emptyDir: {} }],
    containers: [{
      name: "c",
      image: "i",
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
    }],
  };
  assert.deepEqual(podSecurityViolations({ spec: tight }, "restricted", "pods"), []);
});

Deno.test("pod security 1.37: probe and lifecycle hosts refused at baseline", () => {
  const probing: PodSpec = {
    containers: [{
      name: "c",
      image: "i",
      livenessProbe: { httpGet: { host: "10.0.0.1", port: 80 } },
      readinessProbe: { tcpSocket: { port: 80 } },
      lifecycle: { preStop: { tcpSocket: { host: "db", port: 5432 } } },
    }],
  };
  assert.deepEqual(podSecurityViolations({ spec: probing }, "baseline", "pods"), [
    'pods: container "c" has a probe or lifecycle handler on host 10.0.0.1, db',
  ]);
});

Deno.test("pod security 1.37: a user namespace may run as root and unmask /proc at baseline", () => {
  const rooted: PodSpec = {
    hostUsers: false,
    securityContext: { runAsUser: 0, seccompProfile: { type: "RuntimeDefault" } },
    containers: [{
      name: "c",
      image: "i",
      securityContext: {
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
        procMount: "Unmasked",
      },
    }],
  };
  assert.deepEqual(podSecurityFindings({ spec: rooted }, "baseline"), []);
  const checks = podSecurityFindings({ spec: rooted }, "restricted").map((f) => f.check);
  assert.deepEqual(checks, ["procMount_restricted"]);
  const onHost = podSecurityFindings({ spec: { ...rooted, hostUsers: true } }, "restricted");
  assert.deepEqual(onHost.map((f) => f.check), [
    "procMount_restricted",
    "runAsNonRoot",
    "runAsUser",
  ]);
});

Deno.test("pod security: baseline refuses AppArmor Unconfined in every spelling", () => {
  const unconfined = { type: "Unconfined" };
  const spellings: JudgedPod[] = [
    { spec: { ...plain, securityContext: { appArmorProfile: unconfined } } },
    { spec: { containers: [{ name: "c", securityContext: { appArmorProfile: unconfined } }] } },
    {
      spec: {
        ...plain,
        initContainers: [{ name: "i", securityContext: { appArmorProfile: unconfined } }],
      },
    },
    {
      spec: {
        ...plain,
        ephemeralContainers: [{ name: "e", securityContext: { appArmorProfile: unconfined } }],
      },
    },
    {
      annotations: { "container.apparmor.security.beta.kubernetes.io/c": "unconfined" },
      spec: plain,
    },
  ];
  for (const pod of spellings) {
    assert.deepEqual(
      podSecurityFindings(pod, "baseline").map((f) => f.check),
      ["appArmorProfile"],
      JSON.stringify(pod),
    );
  }
  const confined: JudgedPod[] = [
    { spec: { ...plain, securityContext: { appArmorProfile: { type: "RuntimeDefault" } } } },
    {
      annotations: { "container.apparmor.security.beta.kubernetes.io/c": "localhost/p" },
      spec: plain,
    },
    {
      annotations: { "container.apparmor.security.beta.kubernetes.io/c": "runtime/default" },
      spec: plain,
    },
  ];
  for (const pod of confined) assert.deepEqual(podSecurityFindings(pod, "baseline"), []);
});

Deno.test("pod security: restricted judges the pod-level setting even when containers override it", () => {
  const overridden: PodSpec = {
    securityContext: {
      runAsNonRoot: false,
      runAsUser: 0,
      seccompProfile: { type: "RuntimeDefault" },
    },
    containers: [{
      name: "c",
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
      },
    }],
  };
  assert.deepEqual(podSecurityViolations({ spec: overridden }, "restricted", "pods"), [
    "pods: the pod sets runAsNonRoot false",
    "pods: the pod runs as uid 0",
  ]);
});

Deno.test("pod security: the system priority classes are refused at baseline and restricted only", () => {
  const critical: PodSpec = { ...plain, priorityClassName: "system-node-critical" };
  assert.deepEqual(priorityViolations(critical, "privileged", "pods"), []);
  assert.deepEqual(
    priorityViolations({ ...plain, priorityClassName: "high" }, "baseline", "pods"),
    [],
  );
  assert.deepEqual(priorityViolations(critical, "baseline", "pods"), [
    "pods: priorityClassName system-node-critical is reserved for the cluster's own components " +
    "(--pod-security=baseline refuses system-node-critical, system-cluster-critical)",
  ]);
  assert.equal(
    priorityViolations(
      { ...plain, priorityClassName: "system-cluster-critical" },
      "restricted",
      "pods",
    )
      .length,
    1,
  );
});

Deno.test("pod security: the flag parses the three levels and refuses others", () => {
  assert.equal(parseOptions([]).podSecurity, "privileged");
  assert.equal(parseOptions(["--pod-security=baseline"]).podSecurity, "baseline");
  assert.equal(parseOptions([], { OPERATOR_POD_SECURITY: "restricted" }).podSecurity, "restricted");
  assert.throws(() => parseOptions(["--pod-security=lax"]), /--pod-security: "lax"/);
  assert.throws(() => parsePodSecurityLevel("lax"), /not one of privileged, baseline/);
});

Deno.test("pod security: a privileged MiniCluster under --pod-security=baseline is SpecInvalid, nothing created", async () => {
  const op = new FakeOperator({ podSecurity: "baseline" });
  await op.create("evil", {
    containers: [{
      image: "i",
      command: "hostname",
      securityContext: { privileged: true },
      volumes: { root: { path: "/host", hostPath: "/" } },
    }],
    pod: { hostPID: true },
  });
  op.requestsSince();
  await op.converge("evil");
  const writes = op.writesSince();
  assert.ok(
    writes.every((w) => /^(patch|apply) miniclusters|^create events/.test(w)),
    `only the finalizer, the status and Events are written: ${writes.join(", ")}`,
  );
  const invalid = op.condition("evil", "SpecInvalid");
  assert.equal(invalid?.status, "True");
  assert.equal(invalid?.reason, "PodSecurity");
  assert.match(invalid!.message!, /"baseline" Pod Security Standard \(--pod-security\)/);
  assert.match(invalid!.message!, /pods: hostPID is true/);
  assert.match(invalid!.message!, /volume "root" is a hostPath \(\/\)/);
  assert.match(invalid!.message!, /container "[^"]+" is privileged/);
  assert.ok(op.events("evil").includes("PodSecurity"));

  // The system priority classes are refused the same way, for the Job's pods and the services pod.
  const critical = new FakeOperator({ podSecurity: "baseline" });
  await critical.create("critical", {
    containers: [{ image: "i", command: "hostname" }],
    services: [{ name: "db", image: "mongo" }],
    pod: { priorityClassName: "system-node-critical" },
  });
  await critical.converge("critical");
  const refused = critical.condition("critical", "SpecInvalid");
  assert.equal(refused?.reason, "PodSecurity");
  assert.match(refused!.message!, /pods: priorityClassName system-node-critical is reserved/);
  assert.match(refused!.message!, /services pod: priorityClassName system-node-critical/);

  // The same spec without the escapes is built.
  const fine = new FakeOperator({ podSecurity: "baseline" });
  await fine.create("fine");
  await fine.converge("fine");
  assert.equal(fine.condition("fine", "SpecInvalid")?.status, "False");
});
