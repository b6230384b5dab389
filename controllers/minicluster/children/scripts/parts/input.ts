/**
 * What the entrypoint builders read: a MiniCluster with the API defaults applied (api/defaults.ts).
 * Aliased here so the script modules name their input in one place.
 */
import type {
  DefaultedMiniCluster,
  DefaultedMiniClusterContainer,
} from "../../../../../api/mod.ts";

export type MiniClusterInput = DefaultedMiniCluster;
export type ContainerInput = DefaultedMiniClusterContainer;
