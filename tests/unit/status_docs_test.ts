/**
 * docs/status.md has a row for every reason the operator can set and every printer column of the
 * CRD. The reasons come from the code: the exported reason constants, and the reason literals of
 * the files that make conditions, Problems and Events (most reasons are written where they are
 * decided, as literals), found by the shapes those take: `reason: "X"`, a condition tuple
 * `[true|false, "X", ...]`, a `*REASON* = "X"` constant, and status.ts' fallbacks.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  FAILED,
  FLUX_VIEW_EMPTY,
  FLUX_VIEW_NOT_MOUNTED,
  GANG_SCHEDULING,
  READY,
  SIZE_CLAMPED,
  SPEC_INVALID,
  SUCCEEDED,
  UNAPPLIABLE,
} from "../../controllers/minicluster/status/status.ts";
import {
  DRAIN_GRACE_EXPIRED,
  DRAINING,
  NOT_DRAINING,
  RANKS_DRAINING,
} from "../../controllers/minicluster/status/drain_condition.ts";
import {
  GANG_NOT_ENFORCED,
  GANG_UNAVAILABLE,
  GANG_UNSCHEDULABLE,
} from "../../controllers/minicluster/gang/gang_condition.ts";
import {
  SUSPENDED,
  SUSPENDED_REASON,
  WAITING_FOR_ADMISSION,
} from "../../controllers/minicluster/lifecycle/lifecycle.ts";
import * as fluxQueue from "../../controllers/minicluster/fluxqueue/observation.ts";

const ROOT = new URL("../../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, ROOT));
const STATUS_DOC = read("docs/status.md");

/** Every condition type the operator sets. */
const CONDITION_TYPES = [
  READY,
  SUCCEEDED,
  FAILED,
  SPEC_INVALID,
  UNAPPLIABLE,
  SIZE_CLAMPED,
  SUSPENDED,
  GANG_SCHEDULING,
  DRAINING,
  fluxQueue.FLUX_QUEUE_OBSERVED,
];

/** The FluxQueueObserved reasons: every exported string of observation.ts but the type's name. */
const FLUX_QUEUE_REASONS = Object.entries(fluxQueue)
  .filter(([name, v]) => typeof v === "string" && name !== "FLUX_QUEUE_OBSERVED")
  .map(([, v]) => v as string);

const EXPORTED_REASONS = [
  FLUX_VIEW_EMPTY,
  FLUX_VIEW_NOT_MOUNTED,
  DRAIN_GRACE_EXPIRED,
  NOT_DRAINING,
  RANKS_DRAINING,
  GANG_NOT_ENFORCED,
  GANG_UNAVAILABLE,
  GANG_UNSCHEDULABLE,
  SUSPENDED_REASON,
  WAITING_FOR_ADMISSION,
  ...FLUX_QUEUE_REASONS,
];

/** Where reasons are decided: the controller, and the dependents loop's Problems. */
function sourceFiles(): string[] {
  const files: string[] = ["runtime/controller/dependents.ts"];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(new URL(dir, ROOT))) {
      if (e.isDirectory) walk(`${dir}${e.name}/`);
      else if (e.name.endsWith(".ts")) files.push(`${dir}${e.name}`);
    }
  };
  walk("controllers/minicluster/");
  return files.sort();
}

const NAME = `([A-Z][A-Za-z]+)`;
/** The shapes a reason literal takes in any file. */
const REASON_SHAPES = [
  new RegExp(`\\breason:\\s*"${NAME}"`, "g"),
  new RegExp(`\\breason:[^,\\n]*\\?\\s*"${NAME}"\\s*:\\s*"[A-Za-z]+"`, "g"),
  new RegExp(`\\breason:[^,\\n]*\\?\\s*"[A-Za-z]+"\\s*:\\s*"${NAME}"`, "g"),
  new RegExp(`\\b(?:true|false),\\s*"${NAME}"`, "g"),
  new RegExp(`\\b\\w*REASON\\w* = "${NAME}"`, "g"),
];
/** And in status.ts, where conditions are assembled: fallbacks and either-or reasons. */
const STATUS_SHAPES = [
  new RegExp(`(?:\\?\\?|\\|\\|)\\s*"${NAME}"`, "g"),
  new RegExp(`\\?\\s*"${NAME}"\\s*:\\s*"[A-Za-z]+"`, "g"),
  new RegExp(`\\?\\s*"[A-Za-z]+"\\s*:\\s*"${NAME}"`, "g"),
  new RegExp(`\\[\\s*"${NAME}",\\s*"[a-z]`, "g"), // [reason, message]
];
/** A condition's status, not a reason (`ok ? "True" : "False"`). */
const STATUSES = new Set(["True", "False"]);

/** Every reason literal of the code, with the files that write it. */
function reasonLiterals(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sourceFiles()) {
    const text = read(file);
    const shapes = file.endsWith("/status/status.ts")
      ? [...REASON_SHAPES, ...STATUS_SHAPES]
      : REASON_SHAPES;
    for (const shape of shapes) {
      for (const m of text.matchAll(shape)) {
        if (STATUSES.has(m[1])) continue;
        found.set(m[1], [...new Set([...(found.get(m[1]) ?? []), file])]);
      }
    }
  }
  return found;
}

/** The rows of status.md's reasons table: condition, status, and the reasons the row names. */
function reasonRows(): Array<{ type: string; status: string; reasons: string[] }> {
  return STATUS_DOC.split("\n")
    .filter((l) => /^\| `[A-Za-z]+` +\| (True|False) +\|/.test(l))
    .map((l) => {
      const cells = l.split("|").slice(1, -1).map((c) => c.trim());
      return {
        type: cells[0].replaceAll("`", ""),
        status: cells[1],
        reasons: [...cells[2].matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]),
      };
    });
}

/** The reasons of status.md's Events table (Events that are not a condition's). */
function eventRows(): string[] {
  return STATUS_DOC.split("\n")
    .filter((l) => /^\| `[A-Za-z]+` +\| (Normal|Warning) +\|/.test(l))
    .map((l) => /`([A-Za-z]+)`/.exec(l)![1]);
}

Deno.test("status docs: the scan of the code finds the reasons it must", () => {
  const found = reasonLiterals();
  // One of each shape, so a change of the code's style that hides reasons from the scan fails.
  for (
    const reason of [
      "NameTaken", // reason: "X" (runtime/controller/dependents.ts)
      "QuotaExceeded", // reason: a ? "X" : "Y"
      "WriteFailing",
      "JobNotGanged", // [false, "X", ...] over lines (gang_condition.ts)
      "Evicted", // EVICTED_REASON = "X"
      "SpecValid", // ?? "X" (status.ts)
      "NotComplete", // a ? "X" : "Y"
      "NotFailed", // ["X", "message"]
      "PodsReady", // [true, "X", ...]
    ]
  ) {
    assert.ok(found.has(reason), `the scan no longer finds ${reason}`);
  }
  assert.ok(found.size >= 40, `only ${found.size} reasons found: ${[...found.keys()]}`);
});

Deno.test("status docs: every reason the code can set has a row in docs/status.md", () => {
  const documented = new Set([...reasonRows().flatMap((r) => r.reasons), ...eventRows()]);
  const missing: string[] = [];
  for (const [reason, files] of reasonLiterals()) {
    if (!documented.has(reason)) missing.push(`${reason} (${files.join(", ")})`);
  }
  for (const reason of EXPORTED_REASONS) {
    if (!documented.has(reason)) missing.push(`${reason} (an exported constant)`);
  }
  assert.deepEqual(missing, [], "reasons without a row in docs/status.md's tables");
});

Deno.test("status docs: every condition type has its rows, True and False, and no other type", () => {
  const rows = reasonRows();
  for (const type of CONDITION_TYPES) {
    for (const status of ["True", "False"]) {
      assert.ok(
        rows.some((r) => r.type === type && r.status === status),
        `docs/status.md has no ${type} ${status} row`,
      );
    }
  }
  const unknown = rows.filter((r) => !CONDITION_TYPES.includes(r.type)).map((r) => r.type);
  assert.deepEqual(unknown, [], "rows of a condition the operator does not set");
  // The exported reasons sit under their own condition.
  const under = (type: string, reason: string) =>
    assert.ok(
      rows.some((r) => r.type === type && r.reasons.includes(reason)),
      `${reason} is not under ${type}`,
    );
  for (const reason of FLUX_QUEUE_REASONS) under(fluxQueue.FLUX_QUEUE_OBSERVED, reason);
  for (const reason of [RANKS_DRAINING, DRAIN_GRACE_EXPIRED, NOT_DRAINING]) under(DRAINING, reason);
  for (const reason of [GANG_UNAVAILABLE, GANG_UNSCHEDULABLE, GANG_NOT_ENFORCED]) {
    under(GANG_SCHEDULING, reason);
  }
  for (const reason of [SUSPENDED_REASON, WAITING_FOR_ADMISSION]) {
    under(SUSPENDED, reason);
    under(READY, reason);
  }
  under(READY, FLUX_VIEW_NOT_MOUNTED);
  under(FAILED, FLUX_VIEW_EMPTY);
});

Deno.test("status docs: every printer column of the CRD, and which need -o wide", () => {
  const crd = parse(read("crds/minicluster.yaml"));
  const columns = crd.spec.versions[0].additionalPrinterColumns as Array<
    { name: string; priority?: number }
  >;
  assert.ok(columns.length >= 5);
  const rows = new Map(
    STATUS_DOC.split("\n").filter((l) => /^\| `[A-Z]+` +\|/.test(l)).map((l) => {
      const cells = l.split("|").slice(1, -1).map((c) => c.trim());
      return [cells[0].replaceAll("`", ""), cells[1]] as const;
    }),
  );
  for (const c of columns) {
    const wide = rows.get(c.name.toUpperCase());
    assert.ok(wide !== undefined, `docs/status.md has no row for the column ${c.name}`);
    assert.equal(wide, (c.priority ?? 0) > 0 ? "wide" : "", `${c.name}: -o wide`);
  }
  assert.equal(rows.size, columns.length + 1, "a row per column, and NAME");
});
