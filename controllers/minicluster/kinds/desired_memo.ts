/**
 * The desired children a starting MiniCluster was last built with, reused while its inputs stay
 * the same.
 *
 * A MiniCluster's start sets off reconciles that change nothing it is built from: the first status
 * a second after its Job (timing.ts), then a reconcile for each burst of its pods getting Ready.
 * Each built every child and hashed it again (desired.ts, diff.ts), the largest part of a
 * reconcile's own CPU at 1,000 MiniClusters (bench/README.md, "CPU per MiniCluster"). The memo
 * keeps the last build of each MiniCluster with the text of everything it was built from (the
 * defaulted spec, its name and uid, the sizing, the options the reconcile decided) and hands it
 * back only for exactly that text: a memo hit is the build it replaces, byte for byte.
 *
 * It holds a MiniCluster only while it starts, since a settled one is reconciled again only when
 * something changes: the reconciler forgets it once a reconcile asks for nothing more and the Job
 * is not starting (`startingJob`: every pod it runs Ready, suspended or finished). A build is about 24 KiB, so the memo keeps at most `capacity`
 * MiniClusters, dropping the one used longest ago; kept builds are frozen, as shared objects are.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import { deepFreeze } from "../../../runtime/cache/store.ts";
import { type Counter, Registry } from "../../../runtime/metrics/metrics.ts";
import type { Sizing } from "../children/sizing.ts";
import { countReadyPods } from "../status/status.ts";
import type { DesiredChildren } from "./child_kinds.ts";
import { type DesiredOptions, effectiveOptions } from "./desired.ts";

/** About 24 MiB of builds at most. */
export const DESIRED_MEMO_CAPACITY = 1_024;

export const DESIRED_MEMO_METRIC = "minicluster_desired_builds_total";

interface Entry {
  readonly inputs: string;
  readonly desired: DesiredChildren;
}

export class DesiredMemo {
  /** By "namespace/name", the least recently used first. */
  readonly #entries = new Map<string, Entry>();
  readonly #builds: Counter;

  constructor(
    registry: Registry = new Registry(),
    readonly capacity: number = DESIRED_MEMO_CAPACITY,
  ) {
    this.#builds = registry.counter({
      name: DESIRED_MEMO_METRIC,
      help: "Desired children of a MiniCluster by where they came from: built, or reused from " +
        "the memo of a starting MiniCluster whose inputs had not changed.",
      labelNames: ["source"],
    });
  }

  /** MiniClusters held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The children of `spec` at `sizing` with `opts`: the kept build of these inputs, or `build`'s. */
  async desired(
    spec: DefaultedMiniCluster,
    sizing: Sizing,
    opts: DesiredOptions,
    build: () => Promise<DesiredChildren>,
  ): Promise<DesiredChildren> {
    const key = keyOf(spec);
    const inputs = inputsOf(spec, sizing, opts);
    const kept = this.#entries.get(key);
    if (kept) this.#entries.delete(key);
    if (kept?.inputs === inputs) {
      this.#entries.set(key, kept);
      this.#builds.inc({ source: "memo" });
      return kept.desired;
    }
    const desired = deepFreeze(await build());
    this.#builds.inc({ source: "built" });
    this.#entries.set(key, { inputs, desired });
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.capacity) break;
      this.#entries.delete(oldest);
    }
    return desired;
  }

  /** Drops what is kept of the MiniCluster "namespace/name". */
  forget(key: string): void {
    this.#entries.delete(key);
  }
}

/**
 * Whether a Job is still starting: not suspended, not finished, and fewer of its pods Ready than it
 * runs. A queued Job waits for as long as its queue holds it, so it keeps nothing.
 */
export function startingJob(job: Job | undefined, pods: readonly Pod[]): boolean {
  if (!job || job.spec?.suspend === true) return false;
  if (job.status?.conditions?.some((c) => c.status === "True" && FINISHED.has(c.type))) {
    return false;
  }
  return countReadyPods(pods, job) < (job.spec?.parallelism ?? 1);
}

const FINISHED = new Set(["Complete", "Failed", "SuccessCriteriaMet", "FailureTarget"]);

function keyOf(spec: DefaultedMiniCluster): string {
  return `${spec.metadata?.namespace ?? ""}/${spec.metadata?.name ?? ""}`;
}

/** Everything a build reads, as text; the user's certificate is part of `opts`. */
function inputsOf(spec: DefaultedMiniCluster, sizing: Sizing, opts: DesiredOptions): string {
  const { name, namespace, uid, labels, annotations } = spec.metadata ?? {};
  // The sizing's own fields: the reconcile's sizes carry more (a workspace to create) that no
  // builder reads, and that the next reconcile no longer has.
  const { effectiveSize, maximumSize, fluxView } = sizing;
  return JSON.stringify([
    name,
    namespace,
    uid,
    labels,
    annotations,
    spec.spec,
    [effectiveSize, maximumSize, fluxView],
    effectiveOptions(spec, opts),
  ]);
}
