/**
 * Counts each operator's API requests the same way for both: from the apiserver's own audit log.
 * Each operator runs as a user of its own (`identity.ts`), and the policy logs the requests of
 * those users only, at Metadata level (no bodies), so that the log stays small and costs the
 * apiserver the same for both. A request is one event: ResponseComplete, or ResponseStarted for a
 * watch (which completes only when it ends).
 */

import { basename, dirname, extname, join } from "node:path";

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

/**
 * The audit log read between byte offsets (`mark()` now, `since(mark)` later). The apiserver
 * rotates its log (lumberjack: at 100 MB when `--audit-log-maxsize` is 0), renaming it to
 * `<name>-<timestamp>.log` beside the new one and keeping every backup; the offsets are into the
 * backups (oldest first) and the current file read as one stream, so a rotation between `mark()`
 * and `since()` loses nothing.
 */
export class AuditLog {
  constructor(readonly path: string) {}

  /** The rotated backups, oldest first (their timestamps sort), then the current file. */
  #files(): { path: string; size: number }[] {
    const dir = dirname(this.path);
    const ext = extname(this.path);
    const stem = basename(this.path, ext);
    const backups = [...Deno.readDirSync(dir)]
      .map((e) => e.name)
      .filter((n) => n.startsWith(`${stem}-`) && n.endsWith(ext))
      .sort()
      .map((n) => join(dir, n));
    return [...backups, this.path].flatMap((path) => {
      try {
        return [{ path, size: Deno.statSync(path).size }];
      } catch {
        return [];
      }
    });
  }

  mark(): number {
    return this.#files().reduce((a, f) => a + f.size, 0);
  }

  /** The requests of `user` logged from offset `from` to now (whole lines only). */
  async since(from: number, user: string): Promise<Counts> {
    let text = "";
    let skip = from;
    for (const f of this.#files()) {
      if (skip >= f.size) {
        skip -= f.size;
        continue;
      }
      const file = await Deno.open(f.path);
      try {
        await file.seek(skip, Deno.SeekMode.Start);
        text += await new Response(file.readable).text();
      } catch (e) {
        if (!(e instanceof Deno.errors.BadResource)) throw e;
      }
      skip = 0;
    }
    const end = text.lastIndexOf("\n");
    return countRequests(end < 0 ? [] : text.slice(0, end).split("\n"), user);
  }
}
