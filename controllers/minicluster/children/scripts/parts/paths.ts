/**
 * Fixed paths inside the pods that the scripts and the Job builder must agree on.
 */

/** The entrypoint ConfigMap (and the CURVE certificate Secret) are mounted here, read-only. */
export const ENTRYPOINT_MOUNT_PATH = "/flux_operator";
/** File name of the flux-view init container's script under ENTRYPOINT_MOUNT_PATH. */
export const INIT_SCRIPT_FILE = "flux-init.sh";
/** Key of the certificate in the CURVE Secret, and its file name under ENTRYPOINT_MOUNT_PATH. */
export const CURVE_CERT_KEY = "curve.cert";
/** Where the wait scripts read the mounted certificate from (then copy it, it is read-only). */
export const CURVE_CERT_SOURCE = `${ENTRYPOINT_MOUNT_PATH}/${CURVE_CERT_KEY}`;
/** Marker the init container writes once the view and configuration are in place. */
export const VIEW_READY_MARKER = "flux-operator-done.txt";
/** Marker a Flux container writes when it has finished (for view providers to clean up). */
export const COMPLETE_MARKER = "flux-operator-complete.txt";
