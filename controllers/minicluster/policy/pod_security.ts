/**
 * The operator-side pod security policy (`--pod-security`): the Pod Security Standards' checks run
 * on the pods a MiniCluster would make, before anything is created.
 *
 * Creating a MiniCluster is creating pods: whoever may create one gets privileged containers, host
 * namespaces and hostPath mounts if the spec asks for them. Pod Security Admission on the
 * MiniCluster's namespace refuses such pods at creation (the Job controller then reports
 * FailedCreate, which the Ready condition names); this policy refuses the MiniCluster itself, as
 * `SpecInvalid`, so that nothing is created at all and the message names the field to change.
 *
 * The checks are those of Pod Security Admission as kube-apiserver v1.37 runs them at `latest`
 * (the `k8s.io/pod-security-admission` policy checks, one entry of CHECKS each, under the same
 * IDs; older apiservers lack the probe and lifecycle host check of 1.34, the user namespace
 * relaxations and the restricted procMount check of 1.35 and the two sysctls 1.37 allows), on
 * the built pods (the Job's template and the services pod, annotations included), so what the
 * operator adds itself is judged too; tests/integration/pod_security_standards_test.ts holds them
 * against the apiserver's own verdict, rule by rule. Beyond the standards, the two system priority
 * classes are refused at baseline and restricted (SYSTEM_PRIORITY_CLASSES). Pure: no IO.
 */
import type {
  Container,
  LifecycleHandler,
  PodSpec,
  Probe,
  SecurityContext,
} from "kubernetes-types/core/v1.d.ts";
import type { Problem } from "../../../runtime/controller/dependents.ts";
import { APPARMOR_ANNOTATION_PREFIX } from "../children/pod/container_annotations.ts";
import type { DesiredChildren } from "../kinds/child_kinds.ts";

/** `privileged` checks nothing (the default, like the Go operator). */
export type PodSecurityLevel = "privileged" | "baseline" | "restricted";
export const POD_SECURITY_LEVELS: readonly PodSecurityLevel[] = [
  "privileged",
  "baseline",
  "restricted",
];

/** Capabilities the baseline level allows a container to add. */
const BASELINE_CAPABILITIES = new Set([
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
]);
const BASELINE_SELINUX_TYPES = new Set([
  "",
  "container_t",
  "container_init_t",
  "container_kvm_t",
  "container_engine_t",
]);
const SAFE_SYSCTLS = new Set([
  "kernel.shm_rmid_forced",
  "net.ipv4.ip_local_port_range",
  "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.tcp_syncookies",
  "net.ipv4.ping_group_range",
  "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
  "net.ipv4.tcp_rmem",
  "net.ipv4.tcp_wmem",
  "net.ipv4.tcp_slow_start_after_idle",
  "net.ipv4.tcp_notsent_lowat",
]);
/** Volume sources the restricted level allows. */
const RESTRICTED_VOLUMES = new Set([
  "configMap",
  "csi",
  "downwardAPI",
  "emptyDir",
  "ephemeral",
  "image",
  "persistentVolumeClaim",
  "projected",
  "secret",
]);
/** Seccomp and AppArmor profile types that keep the container confined. */
const CONFINED_PROFILES = new Set(["RuntimeDefault", "Localhost"]);

/** A pod as the checks see it: its annotations and its spec. */
export interface JudgedPod {
  annotations?: Record<string, string>;
  spec: PodSpec;
}

/** One rule broken: the check's ID (Pod Security Admission's) and what breaks it. */
export interface PodSecurityFinding {
  check: string;
  message: string;
}

type Say = (what: string) => void;

/** A rule of the standards: its level, the baseline check it replaces at restricted, the test. */
interface Check {
  id: string;
  level: "baseline" | "restricted";
  overrides?: string;
  run(pod: JudgedPod, say: Say): void;
}

/**
 * Every container of the pod: init, regular and ephemeral (each rule about containers covers all
 * three).
 */
function containers(spec: PodSpec): Container[] {
  return [
    ...spec.initContainers ?? [],
    ...spec.containers ?? [],
    ...(spec.ephemeralContainers ?? []) as Container[],
  ];
}

function eachContainer(
  spec: PodSpec,
  fn: (sc: SecurityContext, who: string, c: Container) => void,
): void {
  for (const c of containers(spec)) fn(c.securityContext ?? {}, `container "${c.name}"`, c);
}

/**
 * A pod in a user namespace (`hostUsers: false`): its root is not the node's, so the standards
 * let it run as root and unmask /proc at baseline.
 */
function inUserNamespace(spec: PodSpec): boolean {
  return spec.hostUsers === false;
}

/** The hosts a probe or lifecycle handler would connect to other than the pod itself. */
function handlerHosts(h: Probe | LifecycleHandler | undefined): string[] {
  return [h?.httpGet?.host, h?.tcpSocket?.host].filter((host): host is string => !!host);
}

/** Windows pods are exempt from the restricted rules that are about Linux. */
function linuxOnly(run: (pod: JudgedPod, say: Say) => void): (pod: JudgedPod, say: Say) => void {
  return (pod, say) => {
    if (pod.spec.os?.name !== "windows") run(pod, say);
  };
}

const CHECKS: Check[] = [
  {
    id: "hostNamespaces",
    level: "baseline",
    run({ spec }, say) {
      if (spec.hostNetwork) say("hostNetwork is true");
      if (spec.hostPID) say("hostPID is true");
      if (spec.hostIPC) say("hostIPC is true");
    },
  },
  {
    id: "hostPathVolumes",
    level: "baseline",
    run({ spec }, say) {
      for (const v of spec.volumes ?? []) {
        if (v.hostPath) say(`volume "${v.name}" is a hostPath (${v.hostPath.path})`);
      }
    },
  },
  {
    id: "privileged",
    level: "baseline",
    run({ spec }, say) {
      eachContainer(spec, (sc, who) => {
        if (sc.privileged) say(`${who} is privileged`);
      });
    },
  },
  {
    id: "capabilities_baseline",
    level: "baseline",
    run({ spec }, say) {
      eachContainer(spec, (sc, who) => {
        const added = (sc.capabilities?.add ?? []).filter((c) => !BASELINE_CAPABILITIES.has(c));
        if (added.length) say(`${who} adds capabilities ${added.join(", ")}`);
      });
    },
  },
  {
    id: "hostPorts",
    level: "baseline",
    run({ spec }, say) {
      eachContainer(spec, (_, who, c) => {
        for (const p of c.ports ?? []) if (p.hostPort) say(`${who} uses hostPort ${p.hostPort}`);
      });
    },
  },
  {
    id: "appArmorProfile",
    level: "baseline",
    run({ spec, annotations }, say) {
      const type = spec.securityContext?.appArmorProfile?.type;
      if (type !== undefined && !CONFINED_PROFILES.has(type)) {
        say(`the pod's appArmorProfile is ${type}`);
      }
      eachContainer(spec, (sc, who) => {
        const type = sc.appArmorProfile?.type;
        if (type !== undefined && !CONFINED_PROFILES.has(type)) {
          say(`${who} has appArmorProfile ${type}`);
        }
      });
      for (const [key, value] of Object.entries(annotations ?? {})) {
        if (!key.startsWith(APPARMOR_ANNOTATION_PREFIX)) continue;
        if (value === "" || value === "runtime/default" || value.startsWith("localhost/")) continue;
        say(`annotation ${key} is "${value}" (allowed: runtime/default, localhost/<profile>)`);
      }
    },
  },
  {
    id: "procMount",
    level: "baseline",
    run({ spec }, say) {
      if (!inUserNamespace(spec)) unmaskedProc(spec, say);
    },
  },
  {
    id: "hostProbesAndHostLifecycle",
    level: "baseline",
    run({ spec }, say) {
      eachContainer(spec, (_, who, c) => {
        const hosts = [
          ...handlerHosts(c.livenessProbe),
          ...handlerHosts(c.readinessProbe),
          ...handlerHosts(c.startupProbe),
          ...handlerHosts(c.lifecycle?.postStart),
          ...handlerHosts(c.lifecycle?.preStop),
        ];
        if (hosts.length) {
          say(`${who} has a probe or lifecycle handler on host ${hosts.join(", ")}`);
        }
      });
    },
  },
  {
    id: "seccompProfile_baseline",
    level: "baseline",
    run({ spec }, say) {
      const type = spec.securityContext?.seccompProfile?.type;
      if (type !== undefined && !CONFINED_PROFILES.has(type)) {
        say(`the pod's seccompProfile is ${type}`);
      }
      eachContainer(spec, (sc, who) => {
        const type = sc.seccompProfile?.type;
        if (type !== undefined && !CONFINED_PROFILES.has(type)) {
          say(`${who} has seccompProfile ${type}`);
        }
      });
    },
  },
  {
    id: "seLinuxOptions",
    level: "baseline",
    run({ spec }, say) {
      seLinux(spec.securityContext?.seLinuxOptions, "the pod", say);
      eachContainer(spec, (sc, who) => seLinux(sc.seLinuxOptions, who, say));
    },
  },
  {
    id: "sysctls",
    level: "baseline",
    run({ spec }, say) {
      for (const s of spec.securityContext?.sysctls ?? []) {
        if (!SAFE_SYSCTLS.has(s.name)) say(`sysctl ${s.name} is not a safe sysctl`);
      }
    },
  },
  {
    id: "windowsHostProcess",
    level: "baseline",
    run({ spec }, say) {
      if (spec.securityContext?.windowsOptions?.hostProcess) {
        say("the pod is a Windows host process");
      }
      eachContainer(spec, (sc, who) => {
        if (sc.windowsOptions?.hostProcess) say(`${who} is a Windows host process`);
      });
    },
  },
  {
    id: "allowPrivilegeEscalation",
    level: "restricted",
    run: linuxOnly(({ spec }, say) => {
      eachContainer(spec, (sc, who) => {
        if (sc.allowPrivilegeEscalation !== false) {
          say(`${who} must set allowPrivilegeEscalation false`);
        }
      });
    }),
  },
  {
    id: "procMount_restricted",
    level: "restricted",
    overrides: "procMount",
    run({ spec }, say) {
      unmaskedProc(spec, say);
    },
  },
  {
    id: "runAsNonRoot",
    level: "restricted",
    run({ spec }, say) {
      if (inUserNamespace(spec)) return;
      const pod = spec.securityContext?.runAsNonRoot;
      if (pod === false) say("the pod sets runAsNonRoot false");
      eachContainer(spec, (sc, who) => {
        if (sc.runAsNonRoot === false) say(`${who} sets runAsNonRoot false`);
        else if (sc.runAsNonRoot === undefined && pod !== true) {
          say(`${who} must set runAsNonRoot true`);
        }
      });
    },
  },
  {
    id: "runAsUser",
    level: "restricted",
    run({ spec }, say) {
      if (inUserNamespace(spec)) return;
      if (spec.securityContext?.runAsUser === 0) say("the pod runs as uid 0");
      eachContainer(spec, (sc, who) => {
        if (sc.runAsUser === 0) say(`${who} runs as uid 0`);
      });
    },
  },
  {
    id: "seccompProfile_restricted",
    level: "restricted",
    overrides: "seccompProfile_baseline",
    run: linuxOnly(({ spec }, say) => {
      const pod = spec.securityContext?.seccompProfile?.type;
      if (pod !== undefined && !CONFINED_PROFILES.has(pod)) {
        say(`the pod's seccompProfile is ${pod}`);
      }
      const podConfined = pod !== undefined && CONFINED_PROFILES.has(pod);
      eachContainer(spec, (sc, who) => {
        const type = sc.seccompProfile?.type;
        if (type !== undefined && !CONFINED_PROFILES.has(type)) {
          say(`${who} has seccompProfile ${type}`);
        } else if (type === undefined && !podConfined) {
          say(`${who} must set seccompProfile RuntimeDefault or Localhost`);
        }
      });
    }),
  },
  {
    id: "capabilities_restricted",
    level: "restricted",
    overrides: "capabilities_baseline",
    run: linuxOnly(({ spec }, say) => {
      eachContainer(spec, (sc, who) => {
        if (!(sc.capabilities?.drop ?? []).includes("ALL")) say(`${who} must drop capability ALL`);
        const added = (sc.capabilities?.add ?? []).filter((c) => c !== "NET_BIND_SERVICE");
        if (added.length) {
          say(`${who} adds capabilities ${added.join(", ")} (restricted: NET_BIND_SERVICE only)`);
        }
      });
    }),
  },
  {
    id: "restrictedVolumes",
    level: "restricted",
    overrides: "hostPathVolumes",
    run({ spec }, say) {
      for (const v of spec.volumes ?? []) {
        const source = Object.keys(v).find((k) => k !== "name");
        if (source && RESTRICTED_VOLUMES.has(source)) continue;
        say(
          `volume "${v.name}" is of type ${source ?? "unknown"} (restricted allows ${
            [...RESTRICTED_VOLUMES].join(", ")
          })`,
        );
      }
    },
  },
];

/** The checks of `level`: restricted runs baseline's too, except those it replaces. */
function checksOf(level: PodSecurityLevel): Check[] {
  if (level === "privileged") return [];
  if (level === "baseline") return CHECKS.filter((c) => c.level === "baseline");
  const replaced = new Set(CHECKS.map((c) => c.overrides).filter(Boolean));
  return CHECKS.filter((c) => !replaced.has(c.id));
}

/** Each rule of `level` that `pod` breaks, with what breaks it. */
export function podSecurityFindings(pod: JudgedPod, level: PodSecurityLevel): PodSecurityFinding[] {
  const out: PodSecurityFinding[] = [];
  for (const check of checksOf(level)) {
    check.run(pod, (message) => out.push({ check: check.id, message }));
  }
  return out;
}

/**
 * What `pod` breaks of `level`, one readable line per violation, each naming `where` (e.g. "the
 * Job's pods") and the container or volume. Empty when the pod is allowed.
 */
export function podSecurityViolations(
  pod: JudgedPod,
  level: PodSecurityLevel,
  where: string,
): string[] {
  return podSecurityFindings(pod, level).map((f) => `${where}: ${f.message}`);
}

function unmaskedProc(spec: PodSpec, say: Say): void {
  eachContainer(spec, (sc, who) => {
    if (sc.procMount && sc.procMount !== "Default") say(`${who} has procMount ${sc.procMount}`);
  });
}

function seLinux(
  opts: { type?: string; user?: string; role?: string } | undefined,
  who: string,
  say: Say,
): void {
  if (!opts) return;
  if (!BASELINE_SELINUX_TYPES.has(opts.type ?? "")) say(`${who} has SELinux type ${opts.type}`);
  if (opts.user) say(`${who} sets an SELinux user`);
  if (opts.role) say(`${who} sets an SELinux role`);
}

/**
 * Priority classes that only the cluster's own components should use: pods with them preempt
 * (and are not evicted before) every other pod of the node. The Pod Security Standards do not
 * cover priority and Kubernetes admits them in any namespace; at baseline and restricted the
 * operator refuses them, so that creating a MiniCluster cannot claim the node before its tenants.
 */
const SYSTEM_PRIORITY_CLASSES = new Set(["system-node-critical", "system-cluster-critical"]);

/** The system priority class `spec` asks for under `level`, as a violation naming `where`. */
export function priorityViolations(
  spec: PodSpec,
  level: PodSecurityLevel,
  where: string,
): string[] {
  if (level === "privileged" || !SYSTEM_PRIORITY_CLASSES.has(spec.priorityClassName ?? "")) {
    return [];
  }
  return [
    `${where}: priorityClassName ${spec.priorityClassName} is reserved for the cluster's own ` +
    `components (--pod-security=${level} refuses ${[...SYSTEM_PRIORITY_CLASSES].join(", ")})`,
  ];
}

/** Parses the flag's value. */
export function parsePodSecurityLevel(value: string): PodSecurityLevel {
  const level = POD_SECURITY_LEVELS.find((l) => l === value);
  if (!level) {
    throw new Error(
      `pod security level "${value}" is not one of ${POD_SECURITY_LEVELS.join(", ")}`,
    );
  }
  return level;
}

/**
 * The desired children, or why their pods break the operator's Pod Security Standard: nothing is
 * created for such a MiniCluster (creating it must not launder privileges, pod_security.ts).
 */
export function policed<T extends DesiredChildren>(
  desired: T | { invalid: Problem },
  level: PodSecurityLevel,
): T | { invalid: Problem } {
  if ("invalid" in desired || level === "privileged") return desired;
  const template = desired.job.spec?.template;
  const pods: [JudgedPod, string][] = [[{
    annotations: template?.metadata?.annotations,
    spec: template?.spec ?? { containers: [] },
  }, "pods"]];
  if (desired.servicesPod?.spec) {
    pods.push([{
      annotations: desired.servicesPod.metadata?.annotations,
      spec: desired.servicesPod.spec,
    }, "services pod"]);
  }
  const violations = pods.flatMap(([pod, where]) => [
    ...podSecurityViolations(pod, level, where),
    ...priorityViolations(pod.spec, level, where),
  ]);
  if (violations.length === 0) return desired;
  const shown = violations.slice(0, 10);
  const more = violations.length > shown.length
    ? `; and ${violations.length - shown.length} more`
    : "";
  return {
    invalid: {
      reason: "PodSecurity",
      message: `this operator admits only MiniClusters whose pods meet the "${level}" Pod ` +
        `Security Standard (--pod-security): ${shown.join("; ")}${more}`,
    },
  };
}
