/**
 * Names and versions of the local images. Other code (cluster set-up, tests) imports these to
 * refer to the images without building them; `images.ts` builds them.
 */
import denoJson from "../../deno.json" with { type: "json" };

/** The registry host of every local image: it never resolves, so nothing is ever pulled. */
export const LOCAL_REGISTRY = "minicluster.local";

/** flux-core and flux-sched snapshots in /work/shared/flux (their `git describe` strings). */
export const FLUX_CORE_VERSION = "0.88.0-59-g4a5e79f56";
export const FLUX_SCHED_VERSION = "0.54.0-8-gfd257f71";
/** The release that flux-core describes itself from, used as the short tag of flux-app. */
const FLUX_CORE_RELEASE = FLUX_CORE_VERSION.split("-")[0];

export const PAUSE_IMAGE = `${LOCAL_REGISTRY}/pause:3.10`;
export const FLUX_APP_IMAGE = `${LOCAL_REGISTRY}/flux-app:${FLUX_CORE_RELEASE}`;
export const FLUX_APP_IMAGE_LATEST = `${LOCAL_REGISTRY}/flux-app:latest`;
export const FLUX_VIEW_IMAGE = `${LOCAL_REGISTRY}/flux-view:${FLUX_CORE_VERSION}`;
export const FLUX_VIEW_IMAGE_LATEST = `${LOCAL_REGISTRY}/flux-view:latest`;
/** MPI applications (mpi_image.ts): tagged like flux-app, whose run-time packages it has. */
export const MPI_IMAGE = `${LOCAL_REGISTRY}/mpi:${FLUX_CORE_RELEASE}`;
export const MPI_IMAGE_LATEST = `${LOCAL_REGISTRY}/mpi:latest`;
/** Unqualified, as deploy/install.yaml names it; containerd stores it as docker.io/library/... */
const OPERATOR_VERSION: string = denoJson.version;
export const OPERATOR_IMAGE = `minicluster-operator:${OPERATOR_VERSION}`;

export type ImageName = "pause" | "flux-app" | "flux-view" | "operator" | "mpi";
export const IMAGE_NAMES: readonly ImageName[] = [
  "pause",
  "flux-app",
  "flux-view",
  "operator",
  "mpi",
];

/** Every reference an image is tagged with, the first being the one to use. */
export const IMAGE_REFS: Readonly<Record<ImageName, readonly string[]>> = {
  "pause": [PAUSE_IMAGE],
  "flux-app": [FLUX_APP_IMAGE, FLUX_APP_IMAGE_LATEST],
  "flux-view": [FLUX_VIEW_IMAGE, FLUX_VIEW_IMAGE_LATEST],
  "operator": [OPERATOR_IMAGE],
  "mpi": [MPI_IMAGE, MPI_IMAGE_LATEST],
};

/**
 * Every timestamp in the images (file mtimes, config "created"): fixed, so that the same inputs
 * give the same bytes and so the same digests. 2025-01-01T00:00:00Z.
 */
export const SOURCE_DATE_EPOCH = 1735689600;
