/**
 * Command-line flags and environment variables of a process built on the manager.
 *
 * The manager's own flags are here (`managerFlags`); a program adds its own to the table and parses
 * the whole with `parseFlags` (the operator's table is beside its controller). Every flag can also
 * come from an environment variable (`--lease-duration` ← `OPERATOR_LEASE_DURATION`), which is how
 * a Deployment usually configures it; a flag given on the command line wins over the environment.
 * Parsing is a pure function of (args, env) so it is unit tested without a process, and the --help
 * text is generated from the same table so it cannot drift from what is parsed.
 */
import { type Format, type Level, parseFormat, parseLevel } from "./core/log.ts";
import { RUNTIME_MECHANISMS } from "./pacing/pacing.ts";
import { API_TRANSPORTS, type ApiTransport } from "./client/transport/choice.ts";

/** What the manager (runtime/manager.ts) is configured with. */
export interface ManagerOptions {
  kubeconfig?: string;
  context?: string;
  /** Namespaces to watch; empty = all namespaces. */
  namespaces: string[];
  concurrency: number;
  /** Writes in flight at once across the whole client (Lease renewals excepted); 0: no bound. */
  maxWritesInFlight: number;
  /** Pacing mechanisms switched off by name (runtimeSwitches in runtime/pacing/pacing.ts). */
  pacingOff: string[];
  leaderElect: boolean;
  /** Namespace of the Lease; undefined = the client's namespace (ServiceAccount or context). */
  leaderElectionNamespace?: string;
  leaderElectionId: string;
  /** Identity written into the Lease; undefined = hostname plus a random suffix. */
  leaderElectionIdentity?: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logLevel: Level;
  logFormat: Format;
  healthPort: number;
  bindAddress: string;
  resyncPeriodMs: number;
  cacheSyncTimeoutMs: number;
  failOnForbidden: boolean;
  /** How long a kubeconfig's exec credential plugin may run before it is killed. */
  execPluginTimeoutMs: number;
  /** How the client reaches the API server (ClientOptions `transport`). */
  apiTransport: ApiTransport;
  help: boolean;
}

const ENV_PREFIX = "OPERATOR_";

type Kind = "string" | "list" | "int" | "bool" | "duration" | "level" | "format";

/** One flag of a program whose options are `O`. */
export interface FlagSpec<O> {
  name: string;
  key: keyof O & string;
  kind: Kind;
  help: string;
  /** Default as written on the command line (shown in --help). */
  default?: string;
  /** The values a string flag takes; any other is refused. */
  choices?: readonly string[];
}

/**
 * The manager's flags, in the order --help shows them; `program` names the Lease by default. A
 * program's flag table holds these and its own: parsing, env names and --help all come from it.
 */
export function managerFlags(program: string): FlagSpec<ManagerOptions>[] {
  return [
    {
      name: "kubeconfig",
      key: "kubeconfig",
      kind: "string",
      help: "One kubeconfig file (not a list). Unset: $KUBECONFIG, in-cluster, ~/.kube/config.",
    },
    { name: "context", key: "context", kind: "string", help: "Kubeconfig context to use." },
    {
      name: "namespaces",
      key: "namespaces",
      kind: "list",
      help: "Comma-separated namespaces to watch. Empty: all namespaces.",
      default: "",
    },
    {
      name: "concurrency",
      key: "concurrency",
      kind: "int",
      help: "Reconciles run at once per controller.",
      default: "4",
    },
    {
      name: "max-writes-in-flight",
      key: "maxWritesInFlight",
      kind: "int",
      help: "Writes to the API server in flight at once (Lease renewals excepted); the rest wait " +
        "in order, status and Events last. 0: no bound.",
      default: "8",
    },
    {
      name: "pacing-off",
      key: "pacingOff",
      kind: "list",
      choices: RUNTIME_MECHANISMS,
      help: "Comma-separated write pacing mechanisms to switch off, for measuring what each one " +
        "buys (docs/write-pacing.md). Empty: all on.",
      default: "",
    },
    {
      name: "leader-elect",
      key: "leaderElect",
      kind: "bool",
      help: "Elect a leader with a coordination.k8s.io Lease; only the leader reconciles.",
      default: "false",
    },
    {
      name: "leader-election-namespace",
      key: "leaderElectionNamespace",
      kind: "string",
      help: "Namespace of the Lease. Unset: the ServiceAccount's or the context's namespace.",
    },
    {
      name: "leader-election-id",
      key: "leaderElectionId",
      kind: "string",
      help: "Name of the Lease.",
      default: program,
    },
    {
      name: "leader-election-identity",
      key: "leaderElectionIdentity",
      kind: "string",
      help: "This replica's name in the Lease. Unset: hostname plus a random suffix.",
    },
    {
      name: "lease-duration",
      key: "leaseDurationMs",
      kind: "duration",
      help: "How long a standby waits after the last renewal before taking over.",
      default: "15s",
    },
    {
      name: "renew-deadline",
      key: "renewDeadlineMs",
      kind: "duration",
      help: "How long the leader keeps trying to renew before it gives up leadership.",
      default: "10s",
    },
    {
      name: "retry-period",
      key: "retryPeriodMs",
      kind: "duration",
      help: "Interval between attempts to acquire or renew the Lease.",
      default: "2s",
    },
    {
      name: "log-level",
      key: "logLevel",
      kind: "level",
      help: "debug, info, warn or error.",
      default: "info",
    },
    {
      name: "log-format",
      key: "logFormat",
      kind: "format",
      help: "json (one object per line) or text (key=value, for terminals).",
      default: "json",
    },
    {
      name: "health-port",
      key: "healthPort",
      kind: "int",
      help: "Port serving /healthz, /readyz and /metrics. 0 picks a free port.",
      default: "8081",
    },
    {
      name: "bind-address",
      key: "bindAddress",
      kind: "string",
      help: "Address the health and metrics server listens on.",
      default: "0.0.0.0",
    },
    {
      name: "resync-period",
      key: "resyncPeriodMs",
      kind: "duration",
      help: "Reconcile every object again about this often (jittered), as a safety net. 0: never.",
      default: "1h",
    },
    {
      name: "cache-sync-timeout",
      key: "cacheSyncTimeoutMs",
      kind: "duration",
      help: "Exit with an error if the caches have not synced within this time.",
      default: "2m",
    },
    {
      name: "fail-on-forbidden",
      key: "failOnForbidden",
      kind: "bool",
      help: "Exit at start-up when a list/watch is forbidden (RBAC) in every watched namespace; " +
        "one of several is reported and retried meanwhile. false: retry forever.",
      default: "true",
    },
    {
      name: "exec-plugin-timeout",
      key: "execPluginTimeoutMs",
      kind: "duration",
      help: "Kill a kubeconfig's exec credential plugin still running after this long (logged; " +
        "/readyz fails until a run succeeds).",
      default: "30s",
    },
    {
      name: "api-transport",
      key: "apiTransport",
      kind: "string",
      choices: API_TRANSPORTS,
      help: "How requests and watches reach the API server: http1, the client's own HTTP/1.1 " +
        "(half the CPU per request, one connection per watch); fetch, Deno's fetch over HTTP/2; " +
        "auto, http1 unless a proxy variable is set or TLS verification is off.",
      default: "auto",
    },
    {
      name: "help",
      key: "help",
      kind: "bool",
      help: "Print this help and exit.",
      default: "false",
    },
  ];
}

export class OptionsError extends Error {
  override name = "OptionsError";
}

/** The environment variable of a flag: `lease-duration` → `OPERATOR_LEASE_DURATION`. */
export function envName(flag: string): string {
  return ENV_PREFIX + flag.toUpperCase().replaceAll("-", "_");
}

/**
 * Milliseconds from a Go-style duration ("1h30m", "15s", "250ms"); a bare number is seconds.
 */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  while (pos < s.length) {
    part.lastIndex = pos;
    const m = part.exec(s);
    if (!m) throw new OptionsError(`invalid duration "${text}" (e.g. 500ms, 15s, 2m, 1h30m)`);
    total += Number(m[1]) * unitMs[m[2]];
    pos = part.lastIndex;
  }
  if (s.length === 0) throw new OptionsError(`invalid duration "${text}"`);
  return Math.round(total);
}

function parseBool(text: string, flag: string): boolean {
  const v = text.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(v)) return true;
  if (["false", "0", "no", "off"].includes(v)) return false;
  throw new OptionsError(`--${flag}: invalid boolean "${text}"`);
}

function convert<O>(spec: FlagSpec<O>, raw: string): unknown {
  try {
    switch (spec.kind) {
      case "string":
        if (spec.choices && !spec.choices.includes(raw)) {
          throw new OptionsError(`"${raw}" is not one of ${spec.choices.join(", ")}`);
        }
        return raw;
      case "list": {
        const items = raw.split(",").map((s) => s.trim()).filter((s) => s !== "");
        const unknown = items.find((item) => spec.choices && !spec.choices.includes(item));
        if (unknown !== undefined) {
          throw new OptionsError(`"${unknown}" is not one of ${spec.choices!.join(", ")}`);
        }
        return items;
      }
      case "int": {
        if (!/^\d+$/.test(raw.trim())) throw new OptionsError(`invalid integer "${raw}"`);
        return Number(raw);
      }
      case "bool":
        return parseBool(raw, spec.name);
      case "duration":
        return parseDuration(raw);
      case "level":
        return parseLevel(raw);
      case "format":
        return parseFormat(raw);
    }
  } catch (e) {
    const msg = (e as Error).message;
    throw new OptionsError(msg.startsWith(`--${spec.name}`) ? msg : `--${spec.name}: ${msg}`);
  }
}

/**
 * Parses the flags of `flags` over environment over defaults, then checks the manager's values
 * together.
 */
export function parseFlags<O extends ManagerOptions>(
  flags: readonly FlagSpec<O>[],
  args: readonly string[],
  env: Record<string, string | undefined> = {},
): O {
  const byName = new Map(flags.map((f) => [f.name, f]));
  const values: Record<string, unknown> = {};
  for (const spec of flags) {
    if (spec.default !== undefined) values[spec.key] = convert(spec, spec.default);
    const fromEnv = env[envName(spec.name)];
    if (fromEnv !== undefined && fromEnv !== "") values[spec.key] = convert(spec, fromEnv);
  }
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "-h") {
      values.help = true;
      continue;
    }
    const m = /^--(no-)?([a-z0-9-]+)(?:=(.*))?$/s.exec(arg);
    if (!m) throw new OptionsError(`unexpected argument "${arg}" (see --help)`);
    const [, negated, name, inline] = m;
    const spec = byName.get(name);
    if (!spec) throw new OptionsError(`unknown flag --${name} (see --help)`);
    if (spec.kind === "bool") {
      if (negated && inline !== undefined) {
        throw new OptionsError(`--no-${name} takes no value`);
      }
      values[spec.key] = negated ? false : inline === undefined ? true : convert(spec, inline);
      continue;
    }
    if (negated) throw new OptionsError(`--no-${name}: not a boolean flag`);
    let raw = inline;
    if (raw === undefined) {
      if (i + 1 >= args.length) throw new OptionsError(`--${name} needs a value`);
      raw = args[++i];
    }
    values[spec.key] = convert(spec, raw);
  }
  const opts = values as unknown as O;
  validate(opts);
  return opts;
}

function validate(o: ManagerOptions): void {
  // An empty path is a mistake (`--kubeconfig=$UNSET`), not a request for the defaults.
  if (o.kubeconfig === "") throw new OptionsError("--kubeconfig: empty path");
  if (o.concurrency < 1) throw new OptionsError("--concurrency must be at least 1");
  if (o.healthPort > 65535) throw new OptionsError("--health-port must be at most 65535");
  if (o.retryPeriodMs <= 0) throw new OptionsError("--retry-period must be positive");
  // The same constraints client-go enforces: a leader must give up before a standby may take
  // over, and must try more than once before giving up.
  if (o.leaseDurationMs <= o.renewDeadlineMs) {
    throw new OptionsError("--lease-duration must be greater than --renew-deadline");
  }
  if (o.renewDeadlineMs <= o.retryPeriodMs) {
    throw new OptionsError("--renew-deadline must be greater than --retry-period");
  }
  if (o.cacheSyncTimeoutMs <= 0) throw new OptionsError("--cache-sync-timeout must be positive");
  if (o.execPluginTimeoutMs <= 0) throw new OptionsError("--exec-plugin-timeout must be positive");
}

/** The --help text of `program` (`summary`: what it does), generated from its flag table. */
export function helpText<O>(
  program: string,
  summary: string,
  flags: readonly FlagSpec<O>[],
): string {
  const lines = [
    `Usage: ${program} [flags]`,
    "",
    summary,
    `Every flag can also be set by an environment variable (${envName("log-level")} for`,
    "--log-level, ...); the command line wins. Durations: 500ms, 15s, 2m, 1h30m.",
    "",
    "Flags:",
  ];
  for (const f of flags) {
    const value = f.kind === "bool" ? "" : `=${f.kind === "list" ? "a,b" : f.kind}`;
    const head = `  --${f.name}${value}`;
    const dflt = f.default !== undefined && f.default !== "" ? ` (default ${f.default})` : "";
    lines.push(head, `      ${f.help}${dflt} [${envName(f.name)}]`);
  }
  return lines.join("\n") + "\n";
}
