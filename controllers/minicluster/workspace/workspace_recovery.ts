/**
 * Where a missing workspace's values come from, never the spec while brokers may run.
 *
 * The workspace (workspace.ts) fixes the maximum size the broker hostlist was written for. When a
 * MiniCluster that already has children has no workspace, either an older version of the operator
 * kept it in a ConfigMap (migrated here), or someone deleted it. Re-deriving it from the current
 * spec would let the cluster scale past the hostlist its brokers started with (and rewrite that
 * hostlist for new pods only). So the values come, in this order, from:
 *
 * 1. the ConfigMap workspace of an older version (the MiniCluster's name, our label, ours);
 * 2. the hostlist the brokers were started with, read from the entrypoint ConfigMap on the API
 *    server (the cache keeps only digests of its values): `<job>-[0-N]` means maxSize N+1;
 * 3. the spec, but only when no Job of this MiniCluster exists (no broker was started with
 *    anything yet);
 *
 * and otherwise the MiniCluster is reported as needing re-creation (`WorkspaceLost`), and nothing is
 * written: its running Job stays as it is.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import type { Problem } from "../../../runtime/controller/dependents.ts";
import { getOrUndefined } from "../../../runtime/client/get_or_undefined.ts";
import { ConfigMaps, Jobs } from "../../../runtime/client/resources.ts";
import { controllerOf, type KubeObject } from "../../../runtime/cache/store.ts";
import { entrypointConfigMapName, jobName, workspaceName } from "../children/names.ts";
import { fluxViewOf } from "../children/job.ts";
import { isWorkspace } from "./legacy_workspace.ts";
import type { MiniClusterStores } from "../kinds/child_kinds.ts";
import type { FluxView } from "../children/sizing.ts";

/** The remembered values. */
export interface Workspace {
  /** The maxSize the broker hostlist was written for: the scaling limit for the cluster's life. */
  maxSize: number;
  /** The size the cluster first started with. */
  size: number;
  /**
   * How the pods get the Flux view (flux_view_choice.ts). Absent: Copy (a workspace made before
   * the choice); recovered from the running Job's pod template, or decided anew without a Job.
   */
  fluxView?: FluxView;
}

/** What a missing workspace is made from, or why it cannot be. */
export type Recovered =
  | { workspace: Workspace; from: "spec" | "entrypoint" | "legacy" }
  | { problem: Problem };

/** The values of an older version's workspace ConfigMap; undefined when it holds none. */
function parseLegacyWorkspace(cm: ConfigMap): Workspace | undefined {
  const maxSize = Number(cm.data?.["bootstrap-max-size"]);
  const size = Number(cm.data?.["bootstrap-size"]);
  if (!Number.isInteger(maxSize) || maxSize < 1) return undefined;
  return { maxSize, size: Number.isInteger(size) && size >= 1 ? size : maxSize };
}

/** The flux-view script's two lines that write the broker hostlist (scripts/flux-view-init.ts). */
const HOSTLIST_LINES =
  /^hosts=(.*)\nprintf '%s\\n' "\$\{hosts\}" > "\$\{installRoot\}\/etc\/flux\/system\/hostlist"$/m;

/**
 * The maxSize the entrypoint ConfigMap's hostlist was written for, when its first entry is this
 * MiniCluster's own brokers (`<job>-[0-N]` or `<job>-[0]`); undefined otherwise (a custom hostlist,
 * a lead broker elsewhere, no flux-view script).
 */
export function maxSizeFromEntrypoint(cm: ConfigMap, job: string): number | undefined {
  const found = new Set<number>();
  for (const value of Object.values(cm.data ?? {})) {
    const line = HOSTLIST_LINES.exec(value)?.[1];
    if (line === undefined) continue;
    const hostlist = unquote(line);
    const first = hostlist?.split(",")[0];
    const range = first === undefined ? undefined : /^(.*)-\[0(?:-(\d+))?\]$/.exec(first);
    if (!range || range[1] !== job) continue;
    found.add(range[2] === undefined ? 1 : Number(range[2]) + 1);
  }
  return found.size === 1 ? [...found][0] : undefined;
}

/** A word as shellQuote (scripts/shell.ts) wrote it; undefined when it is not one. */
function unquote(word: string): string | undefined {
  if (/^[A-Za-z0-9_@%+=:,./../\[\]-]+$/.test(word)) return word;
  const quoted = /^'((?:[^']|'\\'')*)'$/.exec(word);
  return quoted ? quoted[1].replaceAll(`'\\''`, "'") : undefined;
}

/** Finds the values of the missing workspace of `mc` (see above). */
export async function recoverWorkspace(
  mc: DefaultedMiniCluster,
  client: ApiClient,
  stores: Pick<MiniClusterStores, "configMaps" | "jobs">,
): Promise<Recovered> {
  const namespace = mc.metadata?.namespace;
  const uid = mc.metadata?.uid;
  const ours = (obj: KubeObject | undefined) => obj !== undefined && controllerOf(obj)?.uid === uid;

  const legacy = stores.configMaps.get(namespace, workspaceName(mc));
  const legacyValues = legacy && ours(legacy) && isWorkspace(legacy)
    ? parseLegacyWorkspace(legacy)
    : undefined;
  if (legacyValues) return { workspace: legacyValues, from: "legacy" };

  const job = stores.jobs.get(namespace, jobName(mc)) ??
    await getOrUndefined<Job>(client, Jobs, namespace, jobName(mc));
  const running = ours(job) ? job : undefined;
  const entrypoint = await getOrUndefined<ConfigMap>(
    client,
    ConfigMaps,
    namespace,
    entrypointConfigMapName(mc),
  );
  const maxSize = ours(entrypoint) ? maxSizeFromEntrypoint(entrypoint!, jobName(mc)) : undefined;
  if (maxSize !== undefined) {
    const parallelism = running?.spec?.parallelism;
    const size = parallelism && parallelism >= 1 ? Math.min(parallelism, maxSize) : maxSize;
    const fluxView = running ? fluxViewOf(running) : undefined;
    return { workspace: { maxSize, size, ...(fluxView ? { fluxView } : {}) }, from: "entrypoint" };
  }
  if (!running) {
    return { workspace: { maxSize: mc.spec.maxSize, size: mc.spec.size }, from: "spec" };
  }
  return {
    problem: {
      reason: "WorkspaceLost",
      message: `the MiniClusterWorkspace ${workspaceName(mc)} is gone and the size the running ` +
        `brokers were started with cannot be recovered from the ConfigMap ` +
        `${entrypointConfigMapName(mc)}; nothing was changed: delete and re-create the MiniCluster`,
    },
  };
}
