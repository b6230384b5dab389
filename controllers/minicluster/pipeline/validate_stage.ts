/**
 * The validate stage of the reconcile (pipeline.ts): the MiniCluster with its defaults (api/), or
 * why its spec cannot be used (`ValidationFailed`); no IO.
 */
import {
  type DefaultedMiniCluster,
  type MiniCluster,
  specSizes,
  validateSpec,
  withDefaults,
} from "../../../api/mod.ts";
import { errorMessage } from "../../../runtime/client/errors.ts";
import { joinedMessages } from "../status/messages.ts";
import { proceed, type Stage, stop } from "./stage.ts";

/** Adds `spec`, the defaulted MiniCluster every later stage builds from. */
export function validateStage(
  record: { readonly mc: MiniCluster },
): Stage<{ spec: DefaultedMiniCluster }> {
  const { mc } = record;
  const requestedSize = specSizes(mc.spec).size;
  const invalid = (message: string) =>
    stop({ requestedSize, invalid: { reason: "ValidationFailed", message } });
  try {
    const problems = validateSpec(mc);
    if (problems.length === 0) return proceed({ spec: withDefaults(mc) });
    return invalid(joinedMessages(problems));
  } catch (e) {
    return invalid(errorMessage(e));
  }
}
