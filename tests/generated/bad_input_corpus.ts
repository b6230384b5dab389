/**
 * The bad-input corpus (tests/fixtures/bad-input/): MiniCluster manifests with what the system must
 * make of each, read from their header comments (format in tests/fixtures/bad-input/README.md).
 *
 * Huge values are written as placeholders so the files stay small and readable; `expand` turns them
 * into the real thing before the manifest is sent:
 *   "<<repeat N text>>" inside a string → `text` repeated N times, in place;
 *   "<<map N prefix value>>" as a whole value → { prefix0: value, ..., prefix<N-1>: value }.
 */
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import type { MiniCluster } from "../../api/mod.ts";

export type Outcome = "rejected" | "invalid" | "unappliable" | "reconciled";

export interface CorpusCase {
  /** Path under tests/fixtures/bad-input, e.g. "collisions/job.yaml". */
  file: string;
  /** First comment line: why the input is bad (or why it is fine). */
  why: string;
  outcome: Outcome;
  /** Substrings of the apply error (rejected) or of the condition's message (invalid, unappliable). */
  expect: string[];
  /** Condition reason, also the reason of the Warning event (invalid, unappliable). */
  reason?: string;
  /** The scripts are run in a sandbox: a `pwned-*` file must never appear. */
  canary: boolean;
  /**
   * The user's own shell (commands, blocks) is in the scripts by design; shellcheck's warnings
   * about it are the user's business, so only its errors count for such a case.
   */
  userShell: boolean;
  /** Objects created before the MiniCluster (someone else's objects holding a name). */
  setup: Record<string, unknown>[];
  miniCluster: MiniCluster;
}

const CORPUS_DIR = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "fixtures",
  "bad-input",
);

const OUTCOMES: Outcome[] = ["rejected", "invalid", "unappliable", "reconciled"];

/** Every case of the corpus, sorted by file. */
export async function loadCorpus(dir = CORPUS_DIR): Promise<CorpusCase[]> {
  const files: string[] = [];
  const walk = async (d: string) => {
    for await (const entry of Deno.readDir(d)) {
      const path = join(d, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && entry.name.endsWith(".yaml")) files.push(path);
    }
  };
  await walk(dir);
  files.sort();
  return await Promise.all(files.map(async (path) => {
    const file = relative(dir, path);
    return parseCase(file, await Deno.readTextFile(path));
  }));
}

function parseCase(file: string, text: string): CorpusCase {
  const header = (key: string) =>
    [...text.matchAll(new RegExp(`^# ${key}: (.+)$`, "gm"))].map((m) => m[1].trim());
  const outcome = header("outcome")[0] as Outcome;
  if (!OUTCOMES.includes(outcome)) throw new Error(`${file}: no valid '# outcome:' line`);
  const docs = parseAllDocuments(text).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0].message}`);
    return expand(d.toJS()) as Record<string, unknown>;
  });
  const miniCluster = docs.pop() as unknown as MiniCluster;
  if (miniCluster?.kind !== "MiniCluster") {
    throw new Error(`${file}: the last document must be the MiniCluster`);
  }
  const c: CorpusCase = {
    file,
    why: text.match(/^# (.+)$/m)?.[1] ?? "",
    outcome,
    expect: header("expect"),
    reason: header("reason")[0],
    canary: header("canary")[0] === "true",
    userShell: header("user-shell")[0] === "true",
    setup: docs,
    miniCluster,
  };
  if (outcome !== "reconciled" && c.expect.length === 0) {
    throw new Error(`${file}: a ${outcome} case needs '# expect:' lines`);
  }
  if ((outcome === "invalid" || outcome === "unappliable") && !c.reason) {
    throw new Error(`${file}: a ${outcome} case needs a '# reason:' line`);
  }
  return c;
}

const REPEAT = /<<repeat (\d+) ([^>]*)>>/g;
const MAP = /^<<map (\d+) (\S+) (.*)>>$/;

/** Replaces the placeholders of huge values (see the module comment). */
function expand(value: unknown): unknown {
  if (typeof value === "string") {
    const map = value.match(MAP);
    if (map) {
      return Object.fromEntries(
        Array.from({ length: Number(map[1]) }, (_, i) => [`${map[2]}${i}`, map[3]]),
      );
    }
    return value.replace(REPEAT, (_, n, text) => text.repeat(Number(n)));
  }
  if (Array.isArray(value)) return value.map(expand);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v)]));
  }
  return value;
}
