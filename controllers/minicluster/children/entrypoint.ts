/**
 * The entrypoint ConfigMap `<name>-entrypoint`: every script the pods run.
 *
 * Keys (Go Flux Operator parity):
 * - `wait-<i>` for the Flux container at index i of spec.containers,
 * - `start-<i>` for a wrapped non-Flux container at index i,
 * - `drain-<i>`, the preStop hook of the Flux container at index i, with
 *   `spec.flux.drainGracePeriodSeconds` (scripts/drain.ts; not in the Go operator),
 * - `<flux.container.name>` (default `flux-view`) for the flux-view init container, unless the
 *   view image is mounted (sizing.ts mountsViewImage: no init container).
 *
 * Unlike the Go operator there is no `curve.cert` key: the CURVE certificate holds a secret key
 * and lives in its own Secret (see curve.ts). The Job mounts both at ENTRYPOINT_MOUNT_PATH
 * (`/flux_operator`) through one projected volume, so the scripts find `/flux_operator/curve.cert`
 * exactly where the Go operator puts it.
 *
 * Contract with the Job builder (volumes.ts): `entrypointItems(mc)` lists the keys projected as
 * `<key>.sh` (init script: `flux-init.sh`), mode 0755; `wrapsEntrypoint(container)` decides
 * which non-Flux containers get a start script; this builder writes exactly those keys.
 */
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { entrypointConfigMapName } from "./names.ts";
import { childMetadata } from "./owner.ts";
import type { MiniClusterInput } from "./scripts/parts/input.ts";
import { EntrypointSpecError, resolveSettings } from "./scripts/parts/settings.ts";
import type { Sizing } from "./sizing.ts";
import { wrapsEntrypoint } from "./pod/volumes.ts";
import { fluxViewInitScript } from "./scripts/flux-view-init.ts";
import { waitScript } from "./scripts/wait.ts";
import { startScript } from "./scripts/start.ts";
import { drainScript } from "./scripts/drain.ts";

export { CURVE_CERT_KEY, CURVE_CERT_SOURCE, ENTRYPOINT_MOUNT_PATH } from "./scripts/parts/paths.ts";
export { EntrypointSpecError } from "./scripts/parts/settings.ts";
/**
 * The (key, path, mode) items the Job projects from this ConfigMap. One definition, in
 * volumes.ts, decides which containers are wrapped; this builder writes exactly those keys.
 */
export { type EntrypointItem, entrypointItems, wrapsEntrypoint } from "./pod/volumes.ts";

const waitKey = (index: number) => `wait-${index}`;
const startKey = (index: number) => `start-${index}`;
const drainKey = (index: number) => `drain-${index}`;

/** The scripts of `mc`'s brokers at `sizing` (the hostlist is written for its maximum). */
export function buildEntrypointConfigMap(mc: MiniClusterInput, sizing: Sizing): ConfigMap {
  const settings = resolveSettings(mc, sizing);
  const data: Record<string, string> = {};
  settings.containers.forEach((container, index) => {
    if (container.runFlux) data[waitKey(index)] = waitScript(settings, index);
    const grace = settings.flux.drainGracePeriodSeconds;
    if (container.runFlux && grace !== undefined) {
      data[drainKey(index)] = drainScript(settings, grace);
    } else if (wrapsEntrypoint(container)) data[startKey(index)] = startScript(settings, index);
  });
  if (settings.view.name in data) {
    throw new EntrypointSpecError(
      `spec.flux.container.name ${JSON.stringify(settings.view.name)} collides with a script name`,
    );
  }
  // No init container runs when the view image is mounted: the Flux container writes the config.
  if (!settings.view.mounted) data[settings.view.name] = fluxViewInitScript(settings);
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: childMetadata(mc, entrypointConfigMapName(mc)),
    data,
  };
}
