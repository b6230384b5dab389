/**
 * The entrypoint of the Flux container (`wait-<i>`): wait for the view, install the CURVE
 * certificate and the resource set, then start Flux. The lead broker (Job index 0) runs
 * `flux start` with the user's work in the configured mode; every other pod runs a follower broker
 * in a retry loop until the instance ends.
 *
 * Run modes of the lead broker, as in the Go operator:
 * - no command (and no commands.script): `flux broker` alone, an interactive cluster;
 * - batch: the command's lines are written to flux-job.batch (wrapped in `flux submit`, or as
 *   written with batchRaw) and run with `flux batch`;
 * - launcher: the command is handed to `flux start` directly (it launches its own jobs);
 * - otherwise: `flux submit` (or flux.submitCommand) of the command with the node/task flags.
 *
 * Differences from the Go operator: broker options and flags are bash arrays (paths and values
 * with spaces or quotes stay single words); the certificate is never printed; a failing follower
 * does not end the loop under `logging.strict`; flux.wrap applies to followers too (the Go script
 * says so in its log line but does not pass it); a failed run fails the container (Go's script
 * always exits 0, so a failed run counts as a succeeded Job): a follower with its exit code, the
 * lead broker with the code the Job fails on at once (lead-finished.ts); with CPU resources on the
 * Flux container, each broker advertises that many cores instead of the node's (cores.ts).
 */
import {
  commandLine,
  echoLiteral,
  indent,
  joinScript,
  shellQuote,
  silencedWhen,
  unquotedHeredoc,
  userBlock,
} from "./parts/shell.ts";
import type { ContainerInput } from "./parts/input.ts";
import type { Settings } from "./parts/settings.ts";
import { viewCheck, viewPaths, waitForView } from "./view-environment.ts";
import { CUSTOM_SCRIPT_PATH, customScript } from "./custom-script.ts";
import { commandWords, shellWords } from "./parts/command-words.ts";
import { COMPLETE_MARKER, CURVE_CERT_SOURCE } from "./parts/paths.ts";
import { leadRestartGuard, leadRunEnded } from "./lead-finished.ts";
import { resourceSetLines } from "./parts/cores.ts";
import { queueReporterLines } from "./queue-report.ts";
import { undrainOnJoin } from "./drain.ts";

const DEFAULT_OUTPUT_DIR = "/tmp/fluxout";

/** `-N <size> -n <tasks>` the way the Go operator derives it from size and tasks. */
export function nodeSpec(size: number, tasks: number): string[] {
  if (tasks === 0) return ["-N", `${size}`];
  if (tasks >= size) return ["-N", `${size}`, `-n${tasks}`];
  return [`-n${tasks}`];
}

/** Broker options as array elements; values from the spec are quoted. */
function brokerOptions(settings: Settings): string[] {
  const { flux, logging } = settings;
  const options = [
    `"-Scron.directory=\${configroot}/etc/flux/system/cron.d"`,
    "-Stbon.fanout=256",
    `"-Srundir=\${configroot}/run/flux"`,
  ];
  if (settings.interactive) options.push("-Sbroker.rc2_none");
  options.push(`"-Sstatedir=\${STATE_DIR}"`);
  if (!flux.disableSocket) options.push(`"-Slocal-uri=local://\${configroot}/run/flux/local"`);
  if (flux.connectTimeout) {
    options.push(shellQuote(`-Stbon.connect_timeout=${flux.connectTimeout}`));
  }
  if (flux.topology) options.push(shellQuote(`-Stbon.topo=${flux.topology}`));
  if (settings.quorum !== undefined) options.push(`-Sbroker.quorum=${settings.quorum}`);
  if (logging.zeromq) options.push("-Stbon.zmqdebug=1");
  options.push(`-Slog-stderr-level=${logging.quiet ? 0 : flux.logLevel}`);
  options.push("-Slog-stderr-mode=local");
  return options;
}

/** The batch file: each non-empty line submitted (or as written with batchRaw), then wait. */
function batchFile(container: ContainerInput): string[] {
  const lines = (container.command ?? "").split("\n");
  const body = container.batchRaw ? lines.filter((line) => line !== "") : [
    ...lines.flatMap((line, index) =>
      line === "" ? [] : [
        // Escaped so the batch job reads FLUX_OUTPUT_DIR from its environment at run time.
        `flux submit --flags waitable --error="\\\${FLUX_OUTPUT_DIR}/job-${index}.err" ` +
        `--output="\\\${FLUX_OUTPUT_DIR}/job-${index}.out" ${line}`,
      ]
    ),
    "flux queue idle",
    "flux jobs -a",
  ];
  const content = ["#!/bin/bash", ...body].join("\n");
  return [
    "# The batch script; the lines are the user's shell (an unquoted heredoc, as in the Go operator)",
    "rm -f flux-job.batch",
    unquotedHeredoc("flux-job.batch", content, "MINICLUSTER_BATCH_EOF"),
    "chmod +x flux-job.batch",
    `chown -R "\${fluxuid}" flux-job.batch`,
  ];
}

/** What the lead broker runs. */
function leadBroker(settings: Settings, container: ContainerInput, hasScript: boolean): string[] {
  const { flux, logging } = settings;
  const quiet = logging.quiet;
  const prefix = shellWords(commandLine(container.commands?.prefix));
  const command = hasScript ? `/bin/bash ${CUSTOM_SCRIPT_PATH}` : commandLine(container.command);
  // The words the job gets: shell operators in the command are the job's, as in Go.
  const words = commandWords(command);
  const startTime = logging.timed ? `/usr/bin/time -f 'FLUXTIME fluxstart wall time %E' ` : "";
  const submitTime = logging.timed ? `/usr/bin/time -f 'FLUXTIME fluxsubmit wall time %E' ` : "";
  const wrap = flux.wrap ? `${shellQuote(`--wrap=${flux.wrap}`)} ` : "";
  const fluxStart = `flux start ${wrap}-o --config "\${cfg}" "\${brokerOptions[@]}"`;
  const withPrefix = (words: string) => [prefix, words].filter((w) => w !== "").join(" ");
  const show = (line: string) => quiet ? [] : echoLiteral(line);

  const lines: string[] = [];
  lines.push(...userBlock(container.commands?.brokerPre, quiet));
  lines.push(...echoLiteral(`Command provided is: ${command}`, silencedWhen(quiet)));

  if (command === "") {
    lines.push(
      `echo "🧠 Running in interactive mode"${silencedWhen(quiet)}`,
      `echo "🌀 flux broker --config-path \${cfg} \${brokerOptions[*]}"`,
      `flux broker --config-path "\${cfg}" "\${brokerOptions[@]}" || exitcode=$?`,
    );
    return lines;
  }

  if (container.batch) {
    const batch =
      `sh -c 'flux batch "$@" --flags waitable ./flux-job.batch && flux job wait --all' flux-batch "\${flags[@]}"`;
    if (!quiet) lines.push(`printf '✨️ Prepared batch job:\\n'`, "cat flux-job.batch");
    lines.push(
      ...show(`🌀 Batch mode: flux start ... ${withPrefix("flux batch ... ./flux-job.batch")}`),
    );
    lines.push(
      "# shellcheck disable=SC2016 # $@ belongs to the inner sh",
      `${startTime}${fluxStart} ${submitTime}${withPrefix(batch)}${
        silencedWhen(quiet)
      } || exitcode=$?`,
    );
  } else if (container.launcher) {
    lines.push(...show(`🌀 Launcher mode: flux start ... ${withPrefix(command)}`));
    lines.push(`${startTime}${fluxStart} ${submitTime}${withPrefix(words)} || exitcode=$?`);
  } else {
    const submit = shellWords(commandLine(flux.submitCommand)) || "flux submit";
    lines.push(...show(`🌀 Submit mode: flux start ... ${withPrefix(`${submit} ... ${command}`)}`));
    lines.push(
      `${startTime}${fluxStart} ${submitTime}${
        withPrefix(`${submit} "\${flags[@]}" --quiet --watch ${words}`)
      } || exitcode=$?`,
    );
  }
  return lines;
}

/** What every other pod runs: a follower broker, retried until it exits cleanly. */
function followerBroker(settings: Settings, container: ContainerInput): string[] {
  const wrap = settings.flux.wrap ? `${shellQuote(`--wrap=${settings.flux.wrap}`)} ` : "";
  const start = `flux start ${wrap}-o --config "\${cfg}" "\${brokerOptions[@]}"`;
  const retry = settings.flux.completeWorkers
    ? [
      `  echo "The follower broker exited with \${exitcode}; completeWorkers is set. Goodbye!"`,
      "  # Completing is what completeWorkers asks for: the pod succeeds",
      "  exitcode=0",
      "  break",
    ]
    : [
      `  if [ "\${exitcode}" -eq 0 ]; then`,
      `    echo "The follower broker exited cleanly. Goodbye!"`,
      "    break",
      "  fi",
      `  echo "The follower broker exited with \${exitcode}"`,
      `  echo "😪 Sleeping 15s to try again..."`,
      "  sleep 15",
    ];
  const drains = settings.flux.drainGracePeriodSeconds !== undefined;
  return [
    ...userBlock(container.commands?.workerPre, settings.logging.quiet),
    ...(drains ? undrainOnJoin() : []),
    "# Follower brokers wait for the lead broker; retried until one exits cleanly",
    `echo "🌀" flux start ${wrap}-o --config "\${cfg}" "\${brokerOptions[*]}"`,
    ...(drains ? followerStopTrap() : []),
    drains ? `while [ "\${stopping}" = 0 ]; do` : "while true; do",
    "  exitcode=0",
    ...(drains
      ? [
        `  ${start} &`,
        "  brokerpid=$!",
        `  if [ "\${stopping}" = 1 ]; then kill -TERM "\${brokerpid}" 2>/dev/null || true; fi`,
        `  wait "\${brokerpid}" || exitcode=$?`,
        `  if [ "\${stopping}" = 1 ]; then`,
        `    wait "\${brokerpid}" || true`,
        `    echo "The follower broker left with its pod (drained first). Goodbye!"`,
        "    exitcode=143",
        "    break",
        "  fi",
      ]
      : [`  ${start} || exitcode=$?`]),
    ...retry,
    "done",
  ];
}

/** How the lead broker's run ends its line: Flux's exit code kept for the end of the script. */
const RUN_EXIT = " || exitcode=$?";

/**
 * With the drain (drain.ts), the lead broker's pod stops at SIGTERM: the pods' grace period is the
 * drain's, and a lead broker that ignored SIGTERM (bash as the container's first process does)
 * would keep the instance up for all of it when its pod goes (the MiniCluster suspended or
 * deleted, the pod evicted), with the followers' drains waiting for their jobs meanwhile. The run
 * goes to the background so that the trap runs at once; the container ends with 143, as the kill
 * at the end of the grace period would have ended it (a code the Job does not fail on).
 */
export function leadStoppable(lines: string[]): string[] {
  const run = lines.findIndex((l) => l.endsWith(RUN_EXIT));
  if (run < 0) throw new Error("the lead broker's run has no exit code to keep");
  return [
    ...lines.slice(0, run),
    "# SIGTERM (the pod goes): the instance ends at once, not at the end of the grace period",
    `trap 'echo "The pod of the lead broker is going: the instance ends"; exit 143' TERM`,
    `${lines[run].slice(0, -RUN_EXIT.length)} &`,
    "leadpid=$!",
    `wait "\${leadpid}"${RUN_EXIT}`,
    "trap - TERM",
    ...lines.slice(run + 1),
  ];
}

/**
 * With the drain (drain.ts), a follower's pod that goes stops its broker on SIGTERM, which the
 * kubelet sends once the preStop hook has drained the rank: the broker leaves the instance and
 * the container ends with 143 (a follower within the size whose pod was deleted is replaced, as
 * when it was killed; one above it is not counted by the Job). Without a trap, bash as the
 * container's first process ignores SIGTERM and the pod would stay for the whole grace period.
 */
export function followerStopTrap(): string[] {
  return [
    "# SIGTERM (the pod goes, its rank drained by the preStop hook): the broker leaves",
    "stopping=0",
    "brokerpid=",
    `trap 'stopping=1; if [ -n "\${brokerpid}" ]; then kill -TERM "\${brokerpid}" 2>/dev/null || true; fi' TERM`,
  ];
}

export function waitScript(settings: Settings, index: number): string {
  const container = settings.containers[index];
  const { logging, flux } = settings;
  const quiet = logging.quiet;
  const script = container.commands?.script ?? "";
  const hasScript = script.trim() !== "";
  const outputDir = container.logs || DEFAULT_OUTPUT_DIR;
  // Words, as Go's unquoted ${flags} made them: an operator in them cannot end the array.
  const optionFlags = commandWords(commandLine(flux.optionFlags));
  const flags = [...nodeSpec(settings.sizing.effectiveSize, settings.tasks)];
  if (optionFlags) flags.push(optionFlags);
  if (logging.debug) flags.push("-vvv");

  return joinScript([
    "#!/bin/bash",
    "# Entrypoint of the Flux container, generated by the MiniCluster operator.",
    ...viewCheck(settings),
    ...(logging.strict ? ["set -eEu -o pipefail"] : []),
    ...(logging.timed
      ? [
        "# The time program, not the shell keyword: the keyword has no -f",
        `if ! [ -x /usr/bin/time ]; then echo "/usr/bin/time is required to use logging.timed" >&2; exit 1; fi`,
      ]
      : []),
    "",
    `fluxuser=$(whoami)`,
    `fluxuid=$(id -u "\${fluxuser}")`,
    "",
    ...userBlock(container.commands?.init, quiet, false),
    "",
    ...waitForView(settings, true),
    "",
    ...leadRestartGuard(settings.mainHost),
    ...viewPaths(settings),
    "",
    `cfg="\${configroot}/etc/flux/config"`,
    ...(hasScript ? ["", ...customScript(script)] : []),
    ...(quiet ? [] : ["", "echo", `echo "Hello user \${fluxuser}"`]),
    "",
    "# The CURVE certificate: mounted read-only from its Secret, copied so the broker may own it",
    `curvesource=${CURVE_CERT_SOURCE}`,
    // Mounted 0400 for root (0440 with an fsGroup) unless the spec names a non-root uid
    // (volumes.ts curveCertMode): an image whose USER is not root needs runAsUser or fsGroup.
    `if ! [ -r "\${curvesource}" ]; then`,
    `  echo "The CURVE certificate \${curvesource} is not readable by uid \${fluxuid}: set securityContext.runAsUser of this container or spec.pod.securityContext.fsGroup" >&2`,
    "  exit 1",
    "fi",
    `curvepath="\${configroot}/curve/curve.cert"`,
    `mkdir -p "\${configroot}/curve"`,
    `cp "\${curvesource}" "\${curvepath}"`,
    // Flux refuses a certificate readable by group or other; 0600 as the Go operator leaves it.
    `chmod 600 "\${curvepath}"`,
    `chown -R "\${fluxuid}" "\${curvepath}"`,
    ...(quiet ? [] : [`echo "🌟️ Curve certificate installed at \${curvepath}"`]),
    "",
    ...resourceSetLines(container, quiet),
    "",
    "# State in the shared volume; job output in the container's log directory",
    `export STATE_DIR="\${configroot}/var/lib/flux"`,
    `export FLUX_OUTPUT_DIR=${shellQuote(outputDir)}`,
    `mkdir -p "\${STATE_DIR}" "\${FLUX_OUTPUT_DIR}"`,
    "",
    `mainHost=${shellQuote(settings.mainHost)}`,
    ...(quiet ? [] : [
      `workdir=$(pwd)`,
      `echo "👋 Hello, I'm $(hostname)"`,
      `echo "The main host is \${mainHost}"`,
      `echo "The working directory is \${workdir}, contents include:"`,
      "ls .",
    ]),
    "",
    `mkdir -p "\${configroot}/etc/flux/system/cron.d"`,
    "brokerOptions=(",
    ...brokerOptions(settings).map((option) => `  ${option}`),
    ")",
    ...(settings.archivePath
      ? [
        "",
        "# Restore the archive when one exists",
        `if [ -e ${shellQuote(settings.archivePath)} ]; then`,
        ...(quiet ? [] : [
          `  echo ${shellQuote(`🧊️ Found an archive at ${settings.archivePath}, restoring it`)}`,
        ]),
        `  brokerOptions+=(${shellQuote(`-Scontent.restore=${settings.archivePath}`)})`,
        "fi",
      ]
      : []),
    "",
    ...userBlock(container.commands?.pre, quiet),
    "",
    "# Node and task flags, then flux.optionFlags as written",
    `flags=(${flags.join(" ")})`,
    `echo "Flags for flux are \${flags[*]}"${silencedWhen(quiet)}`,
    "",
    "exitcode=0",
    `if [ "$(hostname)" = "\${mainHost}" ]; then`,
    ...indent([
      // One reporter per pod: in the first container that runs Flux.
      ...(index === settings.containers.findIndex((c) => c.runFlux)
        ? queueReporterLines(settings)
        : []),
      ...(container.batch ? batchFile(container) : []),
      ...(settings.flux.drainGracePeriodSeconds !== undefined
        ? leadStoppable(leadBroker(settings, container, hasScript))
        : leadBroker(settings, container, hasScript)),
      ...leadRunEnded(),
    ]),
    "else",
    ...indent(followerBroker(settings, container)),
    "fi",
    "",
    ...userBlock(container.commands?.post, false),
    "",
    "# Marker for the view provider to clean up",
    `touch "\${viewbase}/${COMPLETE_MARKER}"`,
    `echo "Flux finished with exit code \${exitcode}"${silencedWhen(quiet)}`,
    "# The container (so the Job index, so the MiniCluster) fails when Flux did",
    `exit "\${exitcode}"`,
  ]);
}
