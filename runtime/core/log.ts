/**
 * A structured logger: one record per line, JSON for machines (the default in a cluster) or
 * `key=value` text for people at a terminal.
 *
 * Records carry fields rather than interpolated strings so that logs can be filtered by
 * the primary's kind, `controller` or `reconcileID`; `child(fields)` binds such context once.
 * Secret payloads never reach the output: any field value that is a Secret object is redacted.
 */

/** The logging the runtime needs; `Logger` satisfies it. */
export interface RuntimeLog {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A log that adds `fields` to every record; without it, `withFields` wraps. */
  child?(fields: Record<string, unknown>): RuntimeLog;
}

export const silentLog: RuntimeLog = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/** `log` with `fields` bound to every record. */
export function withFields(log: RuntimeLog, fields: Record<string, unknown>): RuntimeLog {
  if (log.child) return log.child(fields);
  const bound =
    (level: "debug" | "info" | "warn" | "error") => (msg: string, more?: Record<string, unknown>) =>
      log[level](msg, { ...fields, ...more });
  return { debug: bound("debug"), info: bound("info"), warn: bound("warn"), error: bound("error") };
}

export type Level = "debug" | "info" | "warn" | "error";
export type Format = "json" | "text";
export type Fields = Record<string, unknown>;

const LEVEL_ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

const LEVELS: readonly Level[] = ["debug", "info", "warn", "error"];

export function parseLevel(s: string): Level {
  const l = s.toLowerCase() === "warning" ? "warn" : s.toLowerCase();
  if ((LEVELS as string[]).includes(l)) return l as Level;
  throw new Error(`invalid log level "${s}" (want one of ${LEVELS.join(", ")})`);
}

export function parseFormat(s: string): Format {
  if (s === "json" || s === "text") return s;
  throw new Error(`invalid log format "${s}" (want json or text)`);
}

interface LoggerOptions {
  level?: Level;
  format?: Format;
  /** Fields on every record of this logger. */
  fields?: Fields;
  /** Receives each finished line (without newline). Default: stderr. */
  write?: (line: string) => void;
  /** Clock for timestamps (tests pin it). */
  now?: () => Date;
}

export class Logger {
  readonly level: Level;
  readonly format: Format;
  readonly fields: Readonly<Fields>;
  readonly #write: (line: string) => void;
  readonly #now: () => Date;

  constructor(opts: LoggerOptions = {}) {
    this.level = opts.level ?? "info";
    this.format = opts.format ?? "json";
    this.fields = { ...opts.fields };
    this.#write = opts.write ?? writeStderr;
    this.#now = opts.now ?? (() => new Date());
  }

  /** A logger that adds `fields` to every record (later keys win). */
  child(fields: Fields): Logger {
    return new Logger({
      level: this.level,
      format: this.format,
      fields: { ...this.fields, ...fields },
      write: this.#write,
      now: this.#now,
    });
  }

  /** Whether records of `level` are written; lets callers skip building costly fields. */
  enabled(level: Level): boolean {
    return LEVEL_ORDER[level] >= LEVEL_ORDER[this.level];
  }

  debug(msg: string, fields?: Fields): void {
    this.log("debug", msg, fields);
  }

  info(msg: string, fields?: Fields): void {
    this.log("info", msg, fields);
  }

  warn(msg: string, fields?: Fields): void {
    this.log("warn", msg, fields);
  }

  error(msg: string, fields?: Fields): void {
    this.log("error", msg, fields);
  }

  log(level: Level, msg: string, fields?: Fields): void {
    if (!this.enabled(level)) return;
    const all = { ...this.fields, ...fields };
    const ts = this.#now().toISOString();
    this.#write(
      this.format === "json" ? formatJson(ts, level, msg, all) : formatText(ts, level, msg, all),
    );
  }
}

const encoder = new TextEncoder();

function writeStderr(line: string): void {
  const bytes = encoder.encode(line + "\n");
  let written = 0;
  while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
}

function formatJson(ts: string, level: Level, msg: string, fields: Fields): string {
  const record = { ts, level, msg, ...fields };
  try {
    return JSON.stringify(record, jsonReplacer);
  } catch (e) {
    // Circular structures must not turn a log call into a crash.
    return JSON.stringify({ ts, level, msg, logError: `unserializable fields: ${e}` });
  }
}

function formatText(ts: string, level: Level, msg: string, fields: Fields): string {
  let line = `${ts} ${level.toUpperCase().padEnd(5)} ${msg}`;
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    line += ` ${k}=${textValue(v)}`;
  }
  return line;
}

function textValue(v: unknown): string {
  if (v instanceof Error) return quoteIfNeeded(v.message);
  if (typeof v === "string") return quoteIfNeeded(v);
  try {
    return JSON.stringify(v, jsonReplacer) ?? String(v);
  } catch {
    return String(v);
  }
}

function quoteIfNeeded(s: string): string {
  return s === "" || /[\s"=\\]/.test(s) ? JSON.stringify(s) : s;
}

/** JSON.stringify replacer: Errors as objects, bigints as strings, Secrets redacted. */
function jsonReplacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return errorFields(value);
  if (isSecretLike(value)) return redact(value);
  return value;
}

function errorFields(e: Error): Fields {
  const out: Fields = { name: e.name, message: e.message };
  // ApiError and friends: keep the machine-readable bits (code, reason) without the full body.
  const extra = e as Error & { code?: unknown; reason?: unknown };
  if (extra.code !== undefined) out.code = extra.code;
  if (typeof extra.reason === "string") out.reason = extra.reason;
  if (e.cause !== undefined) out.cause = e.cause instanceof Error ? errorFields(e.cause) : e.cause;
  return out;
}

const REDACTED = "<redacted>";

function isSecretLike(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && (v as { kind?: unknown }).kind === "Secret" &&
    ("data" in v || "stringData" in v);
}

/**
 * A copy of `value` safe to log: a Secret's `data`/`stringData` values are replaced by
 * "<redacted>" (keys are kept, they help debugging) and the last-applied annotation, which
 * may embed the same data, is dropped. Other values are returned unchanged.
 */
export function redact<T>(value: T): T {
  if (!isSecretLike(value)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const field of ["data", "stringData"]) {
    const data = out[field];
    if (data && typeof data === "object") {
      out[field] = Object.fromEntries(Object.keys(data).map((k) => [k, REDACTED]));
    }
  }
  const meta = out.metadata as { annotations?: Record<string, string> } | undefined;
  const lastApplied = "kubectl.kubernetes.io/last-applied-configuration";
  if (meta?.annotations?.[lastApplied] !== undefined) {
    out.metadata = {
      ...meta,
      annotations: { ...meta.annotations, [lastApplied]: REDACTED },
    };
  }
  return out as T;
}
