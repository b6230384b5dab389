/**
 * Counts each operator's API requests the same way for both: from the apiserver's own audit log.
 * Each operator runs as a user of its own (`identity.ts`), and the policy logs the requests of
 * those users only, at Metadata level (no bodies), so that the log stays small and costs the
 * apiserver the same for both. A request is one event: ResponseComplete, or ResponseStarted for a
 * watch (which completes only when it ends).
 */

/** The audit policy for `users`: Metadata for them, nothing for anyone else. */
export function auditPolicy(users: readonly string[]): string {
  return [
    "apiVersion: audit.k8s.io/v1",
    "kind: Policy",
    "omitStages: [RequestReceived]",
    "rules:",
    `  - level: Metadata`,
    `    users: [${users.map((u) => JSON.stringify(u)).join(", ")}]`,
    "  - level: None",
    "",
  ].join("\n");
}

/** Requests keyed `verb resource` (resource with `/subresource`). */
export type Counts = Record<string, number>;

const WRITE_VERBS = new Set(["create", "update", "patch", "delete", "deletecollection"]);

export function total(c: Counts): number {
  return Object.values(c).reduce((a, b) => a + b, 0);
}

export function writes(c: Counts): number {
  return Object.entries(c).reduce((a, [k, v]) => a + (WRITE_VERBS.has(k.split(" ")[0]) ? v : 0), 0);
}

interface AuditEvent {
  stage?: string;
  verb?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string };
  requestURI?: string;
}

/** Counts the requests of `user` in audit log lines (JSON, one event a line). Pure. */
export function countRequests(lines: Iterable<string>, user: string): Counts {
  const out: Counts = {};
  for (const line of lines) {
    if (!line.includes(user)) continue;
    let e: AuditEvent;
    try {
      e = JSON.parse(line);
    } catch {
      continue; // a line being written as we read
    }
    if (e.user?.username !== user) continue;
    const counted = e.verb === "watch"
      ? e.stage === "ResponseStarted"
      : e.stage === "ResponseComplete";
    if (!counted) continue;
    const r = e.objectRef?.resource;
    const resource = r
      ? (e.objectRef?.subresource ? `${r}/${e.objectRef.subresource}` : r)
      : e.requestURI ?? "?";
    const key = `${e.verb} ${resource}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** The audit log read between byte offsets (`mark()` now, `since(mark)` later). */
export class AuditLog {
  constructor(readonly path: string) {}

  mark(): number {
    try {
      return Deno.statSync(this.path).size;
    } catch {
      return 0;
    }
  }

  /** The requests of `user` logged from byte `from` to now (whole lines only). */
  async since(from: number, user: string): Promise<Counts> {
    const file = await Deno.open(this.path);
    try {
      await file.seek(from, Deno.SeekMode.Start);
      const text = await new Response(file.readable).text();
      const end = text.lastIndexOf("\n");
      return countRequests(end < 0 ? [] : text.slice(0, end).split("\n"), user);
    } catch (e) {
      if (e instanceof Deno.errors.BadResource) return {};
      throw e;
    }
  }
}
