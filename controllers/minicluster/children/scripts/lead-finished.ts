/**
 * The end of the lead broker's run is final. When its `flux start` returns, the Flux instance has
 * shut down and the follower brokers have exited cleanly with it: their Job indexes are complete
 * and the Job controller never starts them again. A lead broker started again (its container
 * restarted in place, or a new pod for index 0) would wait for them forever.
 *
 * So a failed run ends the Flux container with LEAD_FAILED_EXIT_CODE, on which the Job fails at
 * once (job.ts `leadBrokerFailure`, a podFailurePolicy: the Job's pods restart Never by default).
 * Under `restartPolicy: OnFailure`, which allows no podFailurePolicy, the kubelet restarts the
 * container in its pod: the run's end is recorded in the pod's shared volume and the restarted
 * script fails at once with the same code, until the restarts use up `backoffLimit`.
 */

import { shellQuote } from "./parts/shell.ts";

/**
 * The Flux container's exit code once the lead broker's run failed (Flux's own code is in its log
 * and termination message). Outside the sysexits range (64-78) and below the shell's 126-165.
 */
export const LEAD_FAILED_EXIT_CODE = 79;

/** What the MiniCluster's `Failed` condition adds to the Job's message when the Job failed on it. */
export const LEAD_FAILED_MESSAGE =
  "the lead broker's run failed after its Flux instance ended (its followers with it): Flux's " +
  "exit code is in the lead broker's log and termination message";

/** File in the pod's shared volume (`${viewbase}`) holding Flux's exit code of the ended run. */
export const LEAD_FINISHED_MARKER = "flux-operator-lead-finished.txt";

/**
 * The function that ends a failed run (its reason to the log and the termination message), and
 * the check that a lead broker's run in this pod has not ended already. After the view variables.
 */
export function leadRestartGuard(mainHost: string): string[] {
  return [
    `leadFinishedMarker="\${viewbase}/${LEAD_FINISHED_MARKER}"`,
    "# The end of a failed run of the lead broker: the code the Job fails on (lead-finished.ts)",
    "# shellcheck disable=SC2317 # also run by the EXIT trap of the lead broker's run",
    "leadBrokerFailed() {",
    `  echo "$1" >&2`,
    `  if [ -w /dev/termination-log ]; then echo "$1" > /dev/termination-log; fi`,
    `  exit ${LEAD_FAILED_EXIT_CODE}`,
    "}",
    "# A lead broker started again in this pod after its run ended: its followers are gone",
    `if [ -e "\${leadFinishedMarker}" ] && [ "$(hostname)" = ${shellQuote(mainHost)} ]; then`,
    `  leadBrokerFailed "The lead broker's Flux instance already ended (exit code $(cat "\${leadFinishedMarker}")); its followers completed with it and never join a lead broker started again"`,
    "fi",
  ];
}

/**
 * Right after the lead broker's `flux start` returned: record the end of the run, and make any
 * non-zero exit from here on (Flux's code, or `commands.post` under logging.strict) the failure.
 */
export function leadRunEnded(): string[] {
  return [
    "# The Flux instance has ended and its followers with it: this run's end is final",
    `echo "\${exitcode}" > "\${leadFinishedMarker}"`,
    "# shellcheck disable=SC2317 # run by the EXIT trap",
    "leadRunExit() {",
    "  local code=$?",
    `  if [ "\${code}" -ne 0 ]; then`,
    `    leadBrokerFailed "The lead broker's Flux instance ended with exit code \${code}; its followers completed with it, so the Job fails instead of starting the lead broker again"`,
    "  fi",
    "}",
    "trap leadRunExit EXIT",
  ];
}
