/**
 * The operator's `--pod-security` verdict against the apiserver's own Pod Security Admission, rule
 * by rule: every check of the Pod Security Standards (baseline and restricted, as the apiserver of
 * this cluster implements them) gets pods that break it in each spelling the rule covers (pod and
 * container fields, init and ephemeral containers, annotations) and pods at its allowed edge
 * values; then the pods the operator builds from MiniClusters. Each pod is judged by the operator
 * and by PSA (a server-side dry-run create in a namespace labelled
 * `pod-security.kubernetes.io/enforce=<level>`), and the checks each names must be the same.
 *
 * The operator judges as PSA 1.37 does. A case about a rule that changed since 1.33 says from which
 * version on (`since`); on an older cluster (K8S_VERSION) its PSA has the older rule, and such a
 * case is judged only by the operator's unit tests.
 */
import assert from "node:assert/strict";
import type {
  Container,
  EphemeralContainer,
  Pod,
  PodSecurityContext,
  PodSpec,
  SecurityContext,
  Volume,
} from "kubernetes-types/core/v1.d.ts";
import type { MiniClusterSpec } from "../../api/mod.ts";
import { validateSpec, withDefaults } from "../../api/mod.ts";
import { desiredChildren } from "../../controllers/minicluster/kinds/desired.ts";
import type { FluxView } from "../../controllers/minicluster/children/sizing.ts";
import {
  podSecurityFindings,
  type PodSecurityLevel,
} from "../../controllers/minicluster/policy/pod_security.ts";
import { ApiError, isConflict } from "../../runtime/client/errors.ts";
import { Namespaces, Pods } from "../../runtime/client/resources.ts";
import { parseKubernetesVersion } from "../../hack/cluster/kubernetes_version.ts";
import { integrationTest, type TestEnv } from "../harness.ts";

/** A pod to judge: its annotations and spec; ephemeral containers are added to it once it runs. */
interface Case {
  name: string;
  annotations?: Record<string, string>;
  spec: PodSpec;
  /** The minor version of Kubernetes from which PSA judges it as the operator does. */
  since?: number;
}

const IMAGE = "registry.example/app:1";

/** What restricted asks of every container. */
const TIGHT_CONTAINER: SecurityContext = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
};
/** What restricted asks of the pod. */
const TIGHT_POD: PodSecurityContext = {
  runAsNonRoot: true,
  seccompProfile: { type: "RuntimeDefault" },
};

/** A container named `name` that meets restricted, with `sc` merged over its security context. */
function ctr(name: string, sc: SecurityContext = {}, extra: Partial<Container> = {}): Container {
  return { name, image: IMAGE, securityContext: { ...TIGHT_CONTAINER, ...sc }, ...extra };
}

/**
 * A pod that meets restricted (one container "c"), changed by `change`: so each case breaks only
 * the rule it is about, at both levels.
 */
function tight(
  name: string,
  change: {
    pod?: PodSecurityContext;
    container?: SecurityContext;
    spec?: Partial<PodSpec>;
    annotations?: Record<string, string>;
    since?: number;
  } = {},
): Case {
  return {
    name,
    annotations: change.annotations,
    ...(change.since ? { since: change.since } : {}),
    spec: {
      securityContext: { ...TIGHT_POD, ...change.pod },
      containers: [ctr("c", change.container)],
      ...change.spec,
    },
  };
}

/** Privileged implies privilege escalation, which the apiserver refuses to be told otherwise. */
const PRIVILEGED: SecurityContext = { privileged: true, allowPrivilegeEscalation: undefined };

const volume = (source: Omit<Volume, "name">): Volume => ({ name: "v", ...source });
const APPARMOR = "container.apparmor.security.beta.kubernetes.io/";
const SECCOMP_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod";

/** Every rule of the Pod Security Standards, as raw pods. */
const RULE_CASES: Case[] = [
  // hostNamespaces
  tight("hostNetwork", { spec: { hostNetwork: true } }),
  tight("hostPID", { spec: { hostPID: true } }),
  tight("hostIPC", { spec: { hostIPC: true } }),
  tight("host namespaces false", { spec: { hostNetwork: false, hostPID: false, hostIPC: false } }),
  // privileged
  tight("privileged container", { container: PRIVILEGED }),
  tight("privileged init container", {
    spec: { initContainers: [ctr("init", PRIVILEGED)] },
  }),
  tight("privileged false", { container: { privileged: false } }),
  // capabilities_baseline, capabilities_restricted
  tight("add SYS_ADMIN", { container: { capabilities: { drop: ["ALL"], add: ["SYS_ADMIN"] } } }),
  tight("add NET_RAW", { container: { capabilities: { drop: ["ALL"], add: ["NET_RAW"] } } }),
  tight("init container adds SYS_PTRACE", {
    spec: {
      initContainers: [ctr("init", { capabilities: { drop: ["ALL"], add: ["SYS_PTRACE"] } })],
    },
  }),
  // The capabilities baseline allows, written out from the standard rather than imported from the
  // operator's table: one the table lacked (or added) then shows as a disagreement with the apiserver.
  tight("add the baseline set", {
    container: {
      capabilities: {
        drop: ["ALL"],
        add: [
          "AUDIT_WRITE",
          "CHOWN",
          "DAC_OVERRIDE",
          "FOWNER",
          "FSETID",
          "KILL",
          "MKNOD",
          "NET_BIND_SERVICE",
          "SETFCAP",
          "SETGID",
          "SETPCAP",
          "SETUID",
          "SYS_CHROOT",
        ],
      },
    },
  }),
  tight("add NET_BIND_SERVICE", {
    container: { capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] } },
  }),
  tight("no capabilities", { container: { capabilities: undefined } }),
  tight("drop NET_RAW only", { container: { capabilities: { drop: ["NET_RAW"] } } }),
  tight("drop all in lower case", { container: { capabilities: { drop: ["all"] } } }),
  // hostPathVolumes, restrictedVolumes
  tight("hostPath volumes", { spec: { volumes: [volume({ hostPath: { path: "/" } })] } }),
  tight("nfs volume", {
    spec: { volumes: [volume({ nfs: { server: "nfs.example", path: "/export" } })] },
  }),
  tight("iscsi volume", {
    spec: {
      volumes: [
        volume({
          iscsi: { targetPortal: "10.0.0.1:3260", iqn: "iqn.2001-04.com.example:t", lun: 0 },
        }),
      ],
    },
  }),
  tight("allowed volume types", {
    spec: {
      volumes: [
        { name: "a", configMap: { name: "cm" } },
        { name: "b", secret: { secretName: "s" } },
        { name: "c", emptyDir: {} },
        { name: "d", persistentVolumeClaim: { claimName: "pvc" } },
        {
          name: "e",
          downwardAPI: { items: [{ path: "n", fieldRef: { fieldPath: "metadata.name" } }] },
        },
        { name: "f", projected: { sources: [{ configMap: { name: "cm" } }] } },
        { name: "g", csi: { driver: "csi.example.com" } },
        {
          name: "h",
          ephemeral: {
            volumeClaimTemplate: {
              spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
            },
          },
        },
      ],
    },
  }),
  // hostPorts
  tight("hostPort", {
    spec: { containers: [ctr("c", {}, { ports: [{ containerPort: 80, hostPort: 8080 }] })] },
  }),
  tight("init container hostPort", {
    spec: {
      initContainers: [ctr("init", {}, { ports: [{ containerPort: 80, hostPort: 8081 }] })],
    },
  }),
  tight("containerPort only", {
    spec: { containers: [ctr("c", {}, { ports: [{ containerPort: 80 }] })] },
  }),
  // appArmorProfile
  tight("pod AppArmor Unconfined", { pod: { appArmorProfile: { type: "Unconfined" } } }),
  tight("container AppArmor Unconfined", {
    container: { appArmorProfile: { type: "Unconfined" } },
  }),
  tight("init container AppArmor Unconfined", {
    spec: { initContainers: [ctr("init", { appArmorProfile: { type: "Unconfined" } })] },
  }),
  tight("AppArmor annotation unconfined", { annotations: { [`${APPARMOR}c`]: "unconfined" } }),
  tight("pod AppArmor RuntimeDefault", { pod: { appArmorProfile: { type: "RuntimeDefault" } } }),
  tight("container AppArmor Localhost", {
    container: { appArmorProfile: { type: "Localhost", localhostProfile: "p" } },
  }),
  tight("AppArmor annotation runtime/default", {
    annotations: { [`${APPARMOR}c`]: "runtime/default" },
  }),
  tight("AppArmor annotation localhost", { annotations: { [`${APPARMOR}c`]: "localhost/p" } }),
  // procMount, procMount_restricted (Unmasked needs a user namespace, where baseline allows it)
  tight("procMount Unmasked", {
    container: { procMount: "Unmasked" },
    spec: { hostUsers: false },
    since: 35,
  }),
  tight("procMount Default", { container: { procMount: "Default" } }),
  // hostProbesAndHostLifecycle
  tight("liveness probe on another host", {
    spec: {
      containers: [ctr("c", {}, { livenessProbe: { httpGet: { host: "10.0.0.1", port: 80 } } })],
    },
    since: 34,
  }),
  tight("readiness probe tcpSocket on another host", {
    spec: {
      containers: [ctr("c", {}, { readinessProbe: { tcpSocket: { host: "db", port: 5432 } } })],
    },
    since: 34,
  }),
  tight("preStop httpGet on another host", {
    spec: {
      containers: [
        ctr("c", {}, { lifecycle: { preStop: { httpGet: { host: "10.0.0.1", port: 80 } } } }),
      ],
    },
    since: 34,
  }),
  tight("probes and lifecycle on the pod itself", {
    spec: {
      containers: [
        ctr("c", {}, {
          livenessProbe: { httpGet: { port: 80 } },
          startupProbe: { tcpSocket: { port: 80 } },
          lifecycle: { postStart: { httpGet: { port: 80 } } },
        }),
      ],
    },
  }),
  // seccompProfile_baseline, seccompProfile_restricted
  tight("pod seccomp Unconfined", { pod: { seccompProfile: { type: "Unconfined" } } }),
  tight("container seccomp Unconfined", { container: { seccompProfile: { type: "Unconfined" } } }),
  tight("init container seccomp Unconfined", {
    spec: { initContainers: [ctr("init", { seccompProfile: { type: "Unconfined" } })] },
  }),
  tight("pod seccomp Unconfined, container RuntimeDefault", {
    pod: { seccompProfile: { type: "Unconfined" } },
    container: { seccompProfile: { type: "RuntimeDefault" } },
  }),
  tight("no seccomp", { pod: { seccompProfile: undefined } }),
  tight("seccomp on the container only", {
    pod: { seccompProfile: undefined },
    container: { seccompProfile: { type: "RuntimeDefault" } },
  }),
  tight("seccomp on the container, not on the init container", {
    pod: { seccompProfile: undefined },
    container: { seccompProfile: { type: "RuntimeDefault" } },
    spec: { initContainers: [ctr("init")] },
  }),
  tight("pod seccomp Localhost", {
    pod: { seccompProfile: { type: "Localhost", localhostProfile: "p.json" } },
  }),
  // The seccomp annotations mean nothing since v1.27; the apiserver only wants them to agree with
  // the field at the same level, which is left unset here.
  tight("seccomp annotation unconfined", {
    pod: { seccompProfile: undefined },
    container: { seccompProfile: { type: "RuntimeDefault" } },
    annotations: { [SECCOMP_ANNOTATION]: "unconfined" },
  }),
  // seLinuxOptions
  tight("pod SELinux type spc_t", { pod: { seLinuxOptions: { type: "spc_t" } } }),
  tight("container SELinux type spc_t", { container: { seLinuxOptions: { type: "spc_t" } } }),
  tight("init container SELinux user", {
    spec: { initContainers: [ctr("init", { seLinuxOptions: { user: "system_u" } })] },
  }),
  tight("pod SELinux role", { pod: { seLinuxOptions: { role: "system_r" } } }),
  tight("SELinux allowed types and level", {
    pod: { seLinuxOptions: { type: "container_engine_t", level: "s0:c1,c2" } },
    container: { seLinuxOptions: { type: "container_kvm_t" } },
  }),
  // sysctls
  tight("unsafe sysctl", { pod: { sysctls: [{ name: "kernel.msgmax", value: "65536" }] } }),
  tight("safe sysctls", {
    pod: {
      sysctls: [
        { name: "net.ipv4.ip_local_reserved_ports", value: "30000" },
        { name: "net.ipv4.tcp_keepalive_time", value: "600" },
        { name: "net.ipv4.tcp_rmem", value: "4096 87380 6291456" },
        { name: "net.ipv4.tcp_wmem", value: "4096 16384 4194304" },
      ],
    },
  }),
  tight("sysctls safe since 1.37", {
    pod: {
      sysctls: [
        { name: "net.ipv4.tcp_slow_start_after_idle", value: "0" },
        { name: "net.ipv4.tcp_notsent_lowat", value: "16384" },
      ],
    },
    since: 37,
  }),
  // windowsHostProcess (hostProcess pods must use the host network)
  {
    name: "container Windows hostProcess",
    spec: {
      hostNetwork: true,
      securityContext: { runAsNonRoot: true },
      containers: [{
        name: "c",
        image: IMAGE,
        securityContext: { windowsOptions: { hostProcess: true } },
      }],
    },
  },
  {
    name: "pod Windows hostProcess",
    spec: {
      hostNetwork: true,
      securityContext: { runAsNonRoot: true, windowsOptions: { hostProcess: true } },
      containers: [{ name: "c", image: IMAGE }],
    },
  },
  tight("hostProcess false", { container: { windowsOptions: { hostProcess: false } } }),
  // allowPrivilegeEscalation
  tight("allowPrivilegeEscalation unset", {
    container: { allowPrivilegeEscalation: undefined },
  }),
  tight("allowPrivilegeEscalation true", { container: { allowPrivilegeEscalation: true } }),
  tight("init container without allowPrivilegeEscalation", {
    spec: { initContainers: [ctr("init", { allowPrivilegeEscalation: undefined })] },
  }),
  {
    name: "Windows pod without Linux settings",
    spec: {
      os: { name: "windows" },
      securityContext: { runAsNonRoot: true },
      containers: [{ name: "c", image: IMAGE }],
    },
  },
  // runAsNonRoot
  tight("runAsNonRoot unset", { pod: { runAsNonRoot: undefined } }),
  tight("pod runAsNonRoot false", { pod: { runAsNonRoot: false } }),
  tight("pod runAsNonRoot false, container true", {
    pod: { runAsNonRoot: false },
    container: { runAsNonRoot: true },
  }),
  tight("container runAsNonRoot false", { container: { runAsNonRoot: false } }),
  tight("runAsNonRoot on the container only", {
    pod: { runAsNonRoot: undefined },
    container: { runAsNonRoot: true },
  }),
  tight("runAsNonRoot false in a user namespace", {
    pod: { runAsNonRoot: false },
    spec: { hostUsers: false },
    since: 35,
  }),
  // runAsUser
  tight("pod runAsUser 0", { pod: { runAsUser: 0 } }),
  tight("container runAsUser 0", { container: { runAsUser: 0 } }),
  tight("pod runAsUser 0, container 1000", {
    pod: { runAsUser: 0 },
    container: { runAsUser: 1000 },
  }),
  tight("runAsUser 1000", { pod: { runAsUser: 1000 } }),
  tight("runAsUser 0 in a user namespace", {
    pod: { runAsUser: 0, runAsNonRoot: undefined },
    spec: { hostUsers: false },
    since: 35,
  }),
  // no security settings at all
  { name: "plain pod", spec: { containers: [{ name: "c", image: IMAGE }] } },
];

/** Rules that cover ephemeral containers, added to a running tight pod. */
const EPHEMERAL_CASES: { name: string; container: EphemeralContainer }[] = [
  { name: "privileged ephemeral container", container: ctr("debug", PRIVILEGED) },
  {
    name: "ephemeral container AppArmor Unconfined",
    container: ctr("debug", { appArmorProfile: { type: "Unconfined" } }),
  },
  {
    name: "ephemeral container adds SYS_ADMIN",
    container: ctr("debug", { capabilities: { drop: ["ALL"], add: ["SYS_ADMIN"] } }),
  },
  {
    name: "ephemeral container without allowPrivilegeEscalation",
    container: ctr("debug", { allowPrivilegeEscalation: undefined }),
  },
  { name: "tight ephemeral container", container: ctr("debug") },
];

/** MiniClusters whose pods reach each field a MiniCluster can set. */
const FLUX_TIGHT = { securityContext: TIGHT_CONTAINER };
const MINICLUSTER_CASES: { name: string; spec: Partial<MiniClusterSpec> }[] = [
  { name: "sample", spec: {} },
  {
    name: "pod AppArmor Unconfined",
    spec: { pod: { securityContext: { appArmorProfile: { type: "Unconfined" } } } },
  },
  {
    name: "AppArmor annotation unconfined",
    // The Flux container is named after the MiniCluster.
    spec: { pod: { annotations: { [`${APPARMOR}mc`]: "unconfined" } } },
  },
  {
    name: "container AppArmor Unconfined",
    spec: {
      containers: [{
        name: "app",
        image: IMAGE,
        securityContext: { appArmorProfile: { type: "Unconfined" } },
      }],
    },
  },
  { name: "hostPID and hostIPC", spec: { pod: { hostPID: true, hostIPC: true } } },
  {
    name: "hostPath volumes",
    spec: {
      containers: [{
        name: "app",
        image: IMAGE,
        volumes: { root: { path: "/host", hostPath: "/" } },
      }],
    },
  },
  {
    name: "privileged, capabilities, procMount, SELinux",
    spec: {
      containers: [{
        name: "app",
        image: IMAGE,
        securityContext: {
          privileged: true,
          capabilities: { add: ["SYS_ADMIN"] },
          seLinuxOptions: { type: "spc_t" },
        },
      }],
    },
  },
  {
    name: "sysctls and seccomp Unconfined",
    spec: {
      pod: {
        securityContext: {
          sysctls: [{ name: "kernel.msgmax", value: "65536" }],
          seccompProfile: { type: "Unconfined" },
        },
      },
    },
  },
  {
    name: "flux view privileged",
    spec: { flux: { container: { securityContext: { privileged: true } } } },
  },
  {
    name: "services container privileged",
    spec: { services: [{ name: "db", image: IMAGE, securityContext: { privileged: true } }] },
  },
  {
    name: "runAsUser 0 under a non-root pod",
    spec: {
      pod: { securityContext: { ...TIGHT_POD, runAsUser: 1000 } },
      flux: { container: FLUX_TIGHT },
      containers: [{
        name: "app",
        image: IMAGE,
        securityContext: { ...TIGHT_CONTAINER, runAsUser: 0 },
      }],
    },
  },
  {
    name: "allowPrivilegeEscalation true",
    spec: {
      pod: { securityContext: { ...TIGHT_POD, runAsUser: 1000 } },
      flux: { container: FLUX_TIGHT },
      containers: [{
        name: "app",
        image: IMAGE,
        securityContext: { ...TIGHT_CONTAINER, allowPrivilegeEscalation: true },
      }],
    },
  },
  {
    name: "restricted throughout",
    spec: {
      pod: { securityContext: { ...TIGHT_POD, runAsUser: 1000 } },
      flux: { container: FLUX_TIGHT },
      containers: [{
        name: "app",
        image: IMAGE,
        securityContext: TIGHT_CONTAINER,
        volumes: {
          data: { path: "/data", emptyDir: true },
          cm: { path: "/cm", configMapName: "cm" },
        },
      }],
      services: [{ name: "db", image: IMAGE, securityContext: TIGHT_CONTAINER }],
    },
  },
];

/**
 * The checks (PSA's check IDs) PSA names in a Forbidden answer: `violates PodSecurity
 * "baseline:latest": host namespaces (hostPID=true), privileged (...)`, each reason mapped back to
 * its check. The restricted seccomp check replaces the baseline one and shares its reason, and
 * from 1.35 so does the restricted procMount check.
 */
function psaChecks(message: string, level: PodSecurityLevel, minor: number): string[] {
  const prefix = `violates PodSecurity "${level}:latest": `;
  const at = message.indexOf(prefix);
  assert.ok(at >= 0, `not a PodSecurity refusal: ${message}`);
  const list = message.slice(at + prefix.length);
  const reasons: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of list) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      reasons.push(current);
      current = "";
    } else current += ch;
  }
  reasons.push(current);
  return reasons.map((r) => {
    const reason = r.trim().replace(/ \(.*\)$/s, "");
    const check = reason === "seccompProfile"
      ? `seccompProfile_${level}`
      : reason === "procMount" && level === "restricted" && minor >= 35
      ? "procMount_restricted"
      : PSA_REASONS[reason];
    assert.ok(check, `unknown PodSecurity reason "${reason}" in ${message}`);
    return check;
  }).sort();
}

/** PSA's forbidden reasons to its check IDs. */
const PSA_REASONS: Record<string, string> = {
  "allowPrivilegeEscalation != false": "allowPrivilegeEscalation",
  "forbidden AppArmor profile": "appArmorProfile",
  "forbidden AppArmor profiles": "appArmorProfile",
  "non-default capabilities": "capabilities_baseline",
  "unrestricted capabilities": "capabilities_restricted",
  "host namespaces": "hostNamespaces",
  "hostPath volumes": "hostPathVolumes",
  "hostPort": "hostPorts",
  "privileged": "privileged",
  "procMount": "procMount",
  "restricted volume types": "restrictedVolumes",
  "runAsNonRoot != true": "runAsNonRoot",
  "runAsUser=0": "runAsUser",
  "seLinuxOptions": "seLinuxOptions",
  "forbidden sysctls": "sysctls",
  "hostProcess": "windowsHostProcess",
  "probe or lifecycle host": "hostProbesAndHostLifecycle",
};

/**
 * The checks of each level of Kubernetes 1.`minor` some case breaks (restricted replaces three of
 * baseline's, and adds its own procMount from 1.35).
 */
function checksOf(level: PodSecurityLevel, minor: number): string[] {
  const baseline = [
    "appArmorProfile",
    "capabilities_baseline",
    "hostNamespaces",
    "hostPathVolumes",
    "hostPorts",
    ...(minor >= 34 ? ["hostProbesAndHostLifecycle"] : []),
    "privileged",
    // No valid pod breaks baseline's procMount from 1.35 on: Unmasked needs a user namespace,
    // where baseline allows it (before 1.35 that one case is not compared).
    "seLinuxOptions",
    "seccompProfile_baseline",
    "sysctls",
    "windowsHostProcess",
  ];
  if (level === "baseline") return baseline;
  const replaced = ["capabilities_baseline", "hostPathVolumes", "seccompProfile_baseline"];
  return [
    ...baseline.filter((c) => !replaced.includes(c)),
    "allowPrivilegeEscalation",
    "capabilities_restricted",
    ...(minor >= 35 ? ["procMount_restricted"] : []),
    "restrictedVolumes",
    "runAsNonRoot",
    "runAsUser",
    "seccompProfile_restricted",
  ].sort();
}

/** The checks the operator names for `pod` at `level`. */
function operatorChecks(pod: Case, level: PodSecurityLevel): string[] {
  return [...new Set(podSecurityFindings(pod, level).map((f) => f.check))].sort();
}

/** What PSA answers to creating `pod` (dry run): the checks it names, none when admitted. */
async function apiserverChecks(
  env: TestEnv,
  pod: Case,
  level: PodSecurityLevel,
  minor: number,
): Promise<string[]> {
  try {
    await env.client.create(Pods, podObject(env, pod), { dryRun: true });
    return [];
  } catch (e) {
    return refusal(e, level, pod.name, minor);
  }
}

function refusal(e: unknown, level: PodSecurityLevel, what: string, minor: number): string[] {
  // A pod the apiserver finds invalid is a wrong case, shown with the disagreements.
  if (!(e instanceof ApiError) || e.code !== 403) return [`not judged (${what}): ${e}`];
  return psaChecks(e.status.message ?? "", level, minor);
}

/** The cluster's minor version: which rules its PSA runs at `latest`. */
async function minorVersion(env: TestEnv): Promise<number> {
  const v = await env.client.request<{ gitVersion: string }>("GET", "/version");
  return parseKubernetesVersion(v.gitVersion).minor;
}

function podObject(env: TestEnv, pod: Case): Pod {
  return {
    metadata: {
      name: "judged",
      namespace: env.namespace,
      ...(pod.annotations ? { annotations: pod.annotations } : {}),
    },
    spec: pod.spec,
  };
}

/**
 * The Job's pod and the services pod the operator builds from `spec`, as cases; with `fluxView`
 * ImageVolume the pods mount the Flux view image (docs/flux-view.md).
 */
async function builtPods(
  name: string,
  spec: Partial<MiniClusterSpec>,
  fluxView: FluxView = "Copy",
): Promise<Case[]> {
  const mc = {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "mc", namespace: "ns", uid: "5b0c7a0e-8f3e-4a53-9a1f-0c2d1e4f6a7b" },
    spec: { size: 2, containers: spec.containers ?? [{ name: "app", image: IMAGE }], ...spec },
  };
  assert.deepEqual(validateSpec(mc), [], `${name}: the MiniCluster is valid`);
  const desired = await desiredChildren(withDefaults(mc), {
    effectiveSize: 2,
    maximumSize: 2,
    fluxView,
  });
  const template = desired.job.spec!.template;
  const out: Case[] = [{
    name: `MiniCluster ${name}: Job pod`,
    annotations: template.metadata?.annotations,
    spec: template.spec!,
  }];
  if (desired.servicesPod) {
    out.push({
      name: `MiniCluster ${name}: services pod`,
      annotations: desired.servicesPod.metadata?.annotations,
      spec: desired.servicesPod.spec!,
    });
  }
  return out;
}

async function enforce(env: TestEnv, level: PodSecurityLevel): Promise<void> {
  await env.client.patch(Namespaces, undefined, env.namespace, {
    metadata: { labels: { "pod-security.kubernetes.io/enforce": level } },
  }, "merge");
}

function differential(level: PodSecurityLevel): void {
  integrationTest(
    `pod security: the operator and Pod Security Admission agree on every ${level} rule`,
    async (env) => {
      await enforce(env, level);
      const minor = await minorVersion(env);
      const rows: string[] = [];
      const named = new Set<string>();
      let admitted = 0;
      const judge = (c: Case, api: string[]) => {
        api.forEach((check) => named.add(check));
        if (api.length === 0) admitted++;
        const ours = operatorChecks(c, level);
        if (ours.join() !== api.join()) {
          rows.push(`${c.name}: operator [${ours.join(", ")}], apiserver [${api.join(", ")}]`);
        }
      };
      const cases = RULE_CASES.filter((c) => (c.since ?? 0) <= minor);
      for (const mc of MINICLUSTER_CASES) cases.push(...await builtPods(mc.name, mc.spec));
      // The view image as an image volume: allowed at both levels.
      for (const mc of MINICLUSTER_CASES.slice(0, 1)) {
        cases.push(...await builtPods(`${mc.name} (view mounted)`, mc.spec, "ImageVolume"));
      }
      for (const c of cases) judge(c, await apiserverChecks(env, c, level, minor));

      // Ephemeral containers are added to a running pod (its ephemeralcontainers subresource),
      // which PSA judges as a whole.
      // On a full cluster the scheduler and the nodes update the pod meanwhile, so each case is
      // put on its latest version (a Conflict means it changed in between: read it again).
      const base = tight("base");
      await env.client.create<Pod>(Pods, { ...podObject(env, base) });
      for (const e of EPHEMERAL_CASES) {
        const c: Case = {
          name: e.name,
          spec: { ...base.spec, ephemeralContainers: [e.container] },
        };
        let api: string[] = [];
        for (let attempt = 1;; attempt++) {
          const running = await env.client.get<Pod>(Pods, env.namespace, "judged");
          try {
            await env.client.replace(Pods, {
              ...running,
              spec: { ...running.spec!, ephemeralContainers: [e.container] },
            }, { subresource: "ephemeralcontainers", dryRun: true });
            api = [];
          } catch (err) {
            if (isConflict(err) && attempt < 5) continue;
            api = refusal(err, level, e.name, minor);
          }
          break;
        }
        judge(c, api);
      }
      assert.deepEqual(rows, [], `the operator and PSA disagree:\n${rows.join("\n")}`);
      // Every check of the level was broken by some case, and some cases were admitted.
      assert.deepEqual([...named].sort(), checksOf(level, minor));
      assert.ok(admitted >= 5, `${admitted} cases admitted`);
    },
    { timeoutMs: 120_000 },
  );
}

differential("baseline");
differential("restricted");
