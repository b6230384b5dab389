/** Shared inputs of the builder tests. */
import { type DefaultedMiniCluster, type MiniClusterSpec, withDefaults } from "../../api/mod.ts";
import { type Sizing, specSizing } from "../../controllers/minicluster/children/sizing.ts";

/** A MiniCluster as the API server returns it (with a uid), defaulted as the reconciler does. */
export function defaultedMiniCluster(
  spec: MiniClusterSpec,
  name = "flux-sample",
): DefaultedMiniCluster {
  return withDefaults({
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name, namespace: "flux-operator", uid: "5b0c7a0e-8f3e-4a53-9a1f-0c2d1e4f6a7b" },
    spec,
  });
}

/** `mc` and the sizing of its brokers started at the spec's sizes, as the builders take them. */
export function specSized(mc: DefaultedMiniCluster): [DefaultedMiniCluster, Sizing] {
  return [mc, specSizing(mc)];
}
