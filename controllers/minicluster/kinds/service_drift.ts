/**
 * The Services' drift policy: a Service is applied, except across headless⇄ClusterIP
 * (flux.minimalService switched): clusterIP is immutable, and an apply that leaves it out succeeds
 * while the server keeps "None", so the Service would silently stay headless. It is re-created
 * instead (also when the API refuses an apply as Invalid for that reason).
 */
import type { Service } from "kubernetes-types/core/v1.d.ts";
import type { DriftPolicy } from "../../../runtime/controller/dependents.ts";
import { isInvalid } from "../../../runtime/client/errors.ts";
import type { Matcher } from "./stores.ts";

const isHeadless = (s: Service) => s.spec?.clusterIP === "None";

/** The drift policy of a Service; `matches` is its kind's matcher (child_kinds.ts). */
export function serviceDrift(matches: Matcher): DriftPolicy<Service> {
  return {
    matches,
    async update(observed, desired, writes) {
      if (isHeadless(observed) !== isHeadless(desired)) return await writes.recreate(observed);
      try {
        return await writes.apply(desired);
      } catch (e) {
        if (isInvalid(e)) return await writes.recreate(observed);
        throw e;
      }
    },
  };
}
