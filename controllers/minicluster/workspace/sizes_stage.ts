/**
 * The sizes stage of the reconcile (pipeline.ts): the workspace's sizes (workspace.ts), read from
 * the cache or, when it is not there, from the API server; no write. A workspace that is someone
 * else's, invalid or lost stops the pipeline (`WorkspaceInvalid`/`WorkspaceLost`).
 */
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import { proceed, type Stage, stop } from "../pipeline/stage.ts";
import type { StatusReport } from "../status/status_writer.ts";
import type { Sizes, WorkspaceResolver } from "./workspace.ts";

/** Adds `sizes`: the requested size, and the sizing the children are built at. */
export function sizesStage(
  workspace: WorkspaceResolver,
): (record: { readonly spec: DefaultedMiniCluster }) => Promise<Stage<{ sizes: Sizes }>> {
  return async ({ spec }) => {
    const sizes = await workspace.sizes(spec);
    if ("problem" in sizes) {
      const requestedSize = spec.spec.size;
      return stop({ requestedSize, unappliable: sizes.problem }, sizes.requeueAfterMs);
    }
    return proceed({ sizes });
  };
}

/** What the status shows of the sizes: every report from the sizes stage on starts with them. */
export function reportedSizes(
  sizes: Sizes,
): Pick<StatusReport, "requestedSize" | "effectiveSize" | "maximumSize"> {
  const { requestedSize, effectiveSize, maximumSize } = sizes;
  return { requestedSize, effectiveSize, maximumSize };
}
