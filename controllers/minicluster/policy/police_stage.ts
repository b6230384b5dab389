/**
 * The police stage of the reconcile (pipeline.ts): the built pods against `--pod-security`
 * (pod_security.ts); a pod the level refuses stops the pipeline (`PodSecurity`) before anything is
 * written. No IO, and nothing added to the record.
 */
import type { DesiredChildren } from "../kinds/child_kinds.ts";
import { type PodSecurityLevel, policed } from "./pod_security.ts";
import { reportedSizes } from "../workspace/sizes_stage.ts";
import { proceed, type Stage, stop } from "../pipeline/stage.ts";
import type { Sizes } from "../workspace/workspace.ts";

export function policeStage(
  level: PodSecurityLevel,
): (
  record: { readonly desired: DesiredChildren; readonly sizes: Sizes },
) => Stage<Record<never, never>> {
  return ({ desired, sizes }) => {
    const judged = policed(desired, level);
    if ("invalid" in judged) return stop({ ...reportedSizes(sizes), invalid: judged.invalid });
    return proceed({});
  };
}
