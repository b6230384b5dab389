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
 * The checks follow https://kubernetes.io/docs/concepts/security/pod-security-standards/ (v1.30)
 * and are run on the built pod specs (the Job's template and the services pod), so what the
 * operator adds itself is judged too. Pure: no IO.
 */
import type { Container, PodSpec, SecurityContext } from "kubernetes-types/core/v1.d.ts";
import type { Problem } from "../../runtime/dependents.ts";
import type { DesiredChildren } from "./desired.ts";

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
]);
/** Volume sources the restricted level allows. */
const RESTRICTED_VOLUMES = new Set([
  "configMap",
  "csi",
  "downwardAPI",
  "emptyDir",
  "ephemeral",
  "persistentVolumeClaim",
  "projected",
  "secret",
]);

/**
 * What `spec` breaks of `level`, one readable line per violation, each naming `where` (e.g. "the
 * Job's pods") and the container or volume. Empty when the pods are allowed.
 */
export function podSecurityViolations(
  spec: PodSpec,
  level: PodSecurityLevel,
  where: string,
): string[] {
  if (level === "privileged") return [];
  const out: string[] = [];
  const say = (what: string) => out.push(`${where}: ${what}`);
  if (spec.hostNetwork) say("hostNetwork is true");
  if (spec.hostPID) say("hostPID is true");
  if (spec.hostIPC) say("hostIPC is true");
  for (const v of spec.volumes ?? []) {
    if (v.hostPath) say(`volume "${v.name}" is a hostPath (${v.hostPath.path})`);
  }
  for (const s of spec.securityContext?.sysctls ?? []) {
    if (!SAFE_SYSCTLS.has(s.name)) say(`sysctl ${s.name} is not a safe sysctl`);
  }
  const podSc = spec.securityContext;
  if (podSc?.seccompProfile?.type === "Unconfined") say("the pod's seccompProfile is Unconfined");
  seLinux(podSc?.seLinuxOptions, "the pod", say);
  const containers = [...spec.initContainers ?? [], ...spec.containers ?? []];
  for (const c of containers) baseline(c, say);
  if (level === "restricted") {
    for (const v of spec.volumes ?? []) {
      const source = Object.keys(v).find((k) => k !== "name");
      if (source && !RESTRICTED_VOLUMES.has(source)) {
        say(
          `volume "${v.name}" is of type ${source} (restricted allows ${
            [...RESTRICTED_VOLUMES].join(", ")
          })`,
        );
      }
    }
    for (const c of containers) restricted(c, podSc, say);
  }
  return out;
}

function baseline(c: Container, say: (what: string) => void): void {
  const sc: SecurityContext = c.securityContext ?? {};
  const who = `container "${c.name}"`;
  if (sc.privileged) say(`${who} is privileged`);
  if (sc.windowsOptions?.hostProcess) say(`${who} is a Windows host process`);
  const added = (sc.capabilities?.add ?? []).filter((cap) => !BASELINE_CAPABILITIES.has(cap));
  if (added.length) say(`${who} adds capabilities ${added.join(", ")}`);
  for (const p of c.ports ?? []) {
    if (p.hostPort) say(`${who} uses hostPort ${p.hostPort}`);
  }
  if (sc.procMount && sc.procMount !== "Default") say(`${who} has procMount ${sc.procMount}`);
  if (sc.seccompProfile?.type === "Unconfined") say(`${who} has seccompProfile Unconfined`);
  const apparmor = sc.appArmorProfile?.type;
  if (apparmor === "Unconfined") say(`${who} has appArmorProfile Unconfined`);
  seLinux(sc.seLinuxOptions, who, say);
}

function seLinux(
  opts: { type?: string; user?: string; role?: string } | undefined,
  who: string,
  say: (what: string) => void,
): void {
  if (!opts) return;
  if (!BASELINE_SELINUX_TYPES.has(opts.type ?? "")) say(`${who} has SELinux type ${opts.type}`);
  if (opts.user) say(`${who} sets an SELinux user`);
  if (opts.role) say(`${who} sets an SELinux role`);
}

function restricted(
  c: Container,
  pod: PodSpec["securityContext"],
  say: (what: string) => void,
): void {
  const sc: SecurityContext = c.securityContext ?? {};
  const who = `container "${c.name}"`;
  if (sc.allowPrivilegeEscalation !== false) say(`${who} must set allowPrivilegeEscalation false`);
  if (!(sc.runAsNonRoot ?? pod?.runAsNonRoot)) say(`${who} must set runAsNonRoot true`);
  if ((sc.runAsUser ?? pod?.runAsUser) === 0) say(`${who} runs as uid 0`);
  const seccomp = sc.seccompProfile?.type ?? pod?.seccompProfile?.type;
  if (seccomp !== "RuntimeDefault" && seccomp !== "Localhost") {
    say(`${who} must set seccompProfile RuntimeDefault or Localhost`);
  }
  if (!(sc.capabilities?.drop ?? []).includes("ALL")) say(`${who} must drop capability ALL`);
  // Those beyond baseline's list were named already.
  const added = (sc.capabilities?.add ?? []).filter((cap) =>
    cap !== "NET_BIND_SERVICE" && BASELINE_CAPABILITIES.has(cap)
  );
  if (added.length) {
    say(`${who} adds capabilities ${added.join(", ")} (restricted: NET_BIND_SERVICE only)`);
  }
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
  const violations = [
    ...podSecurityViolations(desired.job.spec?.template.spec ?? { containers: [] }, level, "pods"),
    ...(desired.servicesPod?.spec
      ? podSecurityViolations(desired.servicesPod.spec, level, "services pod")
      : []),
  ];
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
