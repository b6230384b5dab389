/**
 * The queue reporter's answer (children/scripts/queue-report.ts), read by the operator: parsed and
 * checked before any number of it reaches a status or /metrics. Whatever answers on the lead pod's
 * port is the tenant's own program, so nothing of it is trusted: the text is bounded before it is
 * read (`MAX_REPORT_BYTES`), every count must be a whole number in [0, 2^31) with the parts of a
 * set at most its total, and what does not fit is `invalid` with the operator's own words (never
 * the answer's text, which could be anything). Pure; never throws.
 */
import { QUEUE_REPORT_VERSION } from "../children/scripts/queue-report.ts";

/** The most of an answer the operator reads; a report is a few hundred bytes. */
export const MAX_REPORT_BYTES = 16 * 1024;

/** What the status and /metrics show of a report (the CRD's status.fluxQueue). */
export interface FluxQueueSnapshot {
  jobs: { pending: number; running: number };
  nodes: ResourceCounts;
  cores: ResourceCounts;
  /** Nodes the pending jobs ask for together. */
  pendingNodes: number;
  /** Nodes the largest pending job asks for. */
  largestPendingJobNodes: number;
}

export interface ResourceCounts {
  total: number;
  free: number;
  allocated: number;
  down: number;
}

/** A parsed answer: a report, Flux's error as the reporter got it, or not a report at all. */
export type ParsedReport =
  | { kind: "report"; snapshot: FluxQueueSnapshot; ageSeconds: number }
  | { kind: "fluxError"; error: string; starting: boolean }
  | { kind: "invalid"; why: string };

/** The longest Flux error text kept (the reporter cuts it at 500). */
const MAX_ERROR = 500;

/** The CRD's int32 counts. */
const MAX_COUNT = 2 ** 31 - 1;

/** Parses the reporter's answer. */
export function parseReport(text: string): ParsedReport {
  if (text.length > MAX_REPORT_BYTES) {
    return invalid(`the answer is longer than ${MAX_REPORT_BYTES} bytes`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return invalid("the answer is not JSON");
  }
  if (!isObject(doc)) return invalid("the answer is not a JSON object");
  if (doc.version !== QUEUE_REPORT_VERSION) {
    return invalid(`the answer is not a version ${QUEUE_REPORT_VERSION} queue report`);
  }
  if (doc.ok === false) {
    const error = typeof doc.error === "string" && doc.error.trim() !== ""
      ? doc.error.trim().slice(0, MAX_ERROR)
      : "no error text";
    return { kind: "fluxError", error, starting: doc.starting === true };
  }
  if (doc.ok !== true) return invalid("the answer has no ok field");
  const problems: string[] = [];
  const count = (where: string, v: unknown): number => {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_COUNT) {
      problems.push(`${where} is not a whole number from 0 to ${MAX_COUNT}`);
      return 0;
    }
    return v;
  };
  const part = (name: string) => isObject(doc[name]) ? doc[name] as Record<string, unknown> : {};
  const jobsDoc = part("jobs");
  const jobs = {
    pending: count("jobs.pending", jobsDoc.pending),
    running: count("jobs.running", jobsDoc.running),
  };
  const counts = (name: "nodes" | "cores"): ResourceCounts => {
    const d = part(name);
    const c = {
      total: count(`${name}.total`, d.total),
      free: count(`${name}.free`, d.free),
      allocated: count(`${name}.allocated`, d.allocated),
      down: count(`${name}.down`, d.down),
    };
    for (const key of ["free", "allocated", "down"] as const) {
      if (c[key] > c.total) problems.push(`${name}.${key} ${c[key]} is above ${name}.total`);
    }
    return c;
  };
  const nodes = counts("nodes");
  const cores = counts("cores");
  const pendingNodes = count("pendingNodes", doc.pendingNodes);
  const largestPendingJobNodes = count("largestPendingJobNodes", doc.largestPendingJobNodes);
  if (largestPendingJobNodes > pendingNodes) {
    problems.push("largestPendingJobNodes is above pendingNodes");
  }
  if (jobs.pending === 0 && pendingNodes > 0) {
    problems.push("pendingNodes is above 0 with no pending job");
  }
  const age = doc.ageSeconds;
  if (typeof age !== "number" || !Number.isFinite(age) || age < 0) {
    problems.push("ageSeconds is not a number of seconds");
  }
  if (problems.length) return invalid(problems.slice(0, 3).join("; "));
  return {
    kind: "report",
    snapshot: { jobs, nodes, cores, pendingNodes, largestPendingJobNodes },
    ageSeconds: age as number,
  };
}

function invalid(why: string): ParsedReport {
  return { kind: "invalid", why };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
