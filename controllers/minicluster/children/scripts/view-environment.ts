/**
 * The part shared by the wait script (Flux containers) and the start script (other containers):
 * wait for the flux-view init container's marker, put the view on the PATH and set up its Python,
 * and write the helper files `flux-view.sh` (environment to source), `flux-connect.sh` (a shell
 * connected to the local broker) and `load-fluxion.sh` into the shared volume.
 *
 * With the view image mounted (docs/flux-view.md) the view is read where the image keeps it
 * (MOUNTED_VIEWS), checked first (viewCheck), and there is no init container: the Flux container
 * writes the configuration and the marker itself, the other containers wait for that marker.
 */
import { shellQuote, silencedWhen, writeFileCommand } from "./parts/shell.ts";
import type { Settings } from "./parts/settings.ts";
import { VIEW_READY_MARKER } from "./parts/paths.ts";
import { configurationLines } from "./flux-view-init.ts";

/** Where a mounted view image's spack view is: `<MOUNTED_VIEWS>/<hash>` (volumes.ts mounts it). */
export const MOUNTED_VIEWS = "/opt/views/._view";
/** The file kubelet reads a container's termination message from (the default path). */
export const TERMINATION_LOG = "/dev/termination-log";
/**
 * The exit code of a container whose mounted view has no Flux. Outside the sysexits range (64-78),
 * beside the lead broker's 79 (lead-finished.ts); the Job fails on it at once (job.ts).
 */
export const FLUX_VIEW_EMPTY_EXIT_CODE = 80;

/** What a container with an empty mounted view says, in its log and termination message. */
export function fluxViewEmptyMessage(image: string): string {
  return `the Flux view image volume (${image}) is empty: ${MOUNTED_VIEWS} holds no bin/flux. ` +
    "This node's container runtime does not support image volumes with subPath (containerd " +
    "2.2 or CRI-O 1.33 and later are needed); set spec.flux.container.viewFrom: Copy or run " +
    "the operator with --flux-view-mount=copy";
}

/**
 * Before anything else, when the view image is mounted: `viewroot` is its spack view, and it must
 * have an executable `bin/flux`. A runtime without image volume support mounts the volume empty
 * (or, without subPath support, the whole image elsewhere) and says nothing; the container then
 * fails at once with FLUX_VIEW_EMPTY_EXIT_CODE and a message naming the cause and the fix.
 */
export function viewCheck(settings: Settings): string[] {
  if (!settings.view.mounted) return [];
  const message = fluxViewEmptyMessage(settings.view.image);
  return [
    "# The Flux view is the view image, mounted read-only: it must hold Flux",
    `viewroot=$(find ${MOUNTED_VIEWS} -mindepth 1 -maxdepth 1 2>/dev/null | sort | head -n 1)`,
    `if ! [ -x "\${viewroot}/bin/flux" ]; then`,
    `  echo ${shellQuote(message)} >&2`,
    `  printf '%s' ${shellQuote(message)} > ${TERMINATION_LOG} 2>/dev/null || true`,
    `  exit ${FLUX_VIEW_EMPTY_EXIT_CODE}`,
    "fi",
  ];
}

/**
 * Variables for the view and config roots; wait until the init container has filled them, or,
 * with the view image mounted, write the configuration (`writesConfiguration`, the Flux
 * container) or wait for the container that does.
 */
export function waitForView(settings: Settings, writesConfiguration = false): string[] {
  const { quiet } = settings.logging;
  const mounted = settings.view.mounted;
  const marker = `"\${viewbase}/${VIEW_READY_MARKER}"`;
  const ready = mounted && writesConfiguration
    ? [
      "# No init container: this container writes the configuration, then marks it ready",
      `installRoot="\${configroot}"`,
      ...configurationLines(settings),
      `touch ${marker}`,
    ]
    : [
      mounted
        ? "# The Flux container marks the volume when the configuration is written"
        : "# The flux-view init container marks the volume when it is ready",
      `until [ -e ${marker} ]; do`,
      `  echo "Waiting for the Flux view in \${viewbase}"${silencedWhen(quiet)}`,
      "  sleep 2",
      "done",
    ];
  return [
    "# The Flux view and its configuration live in the shared volume",
    `viewbase=${shellQuote(settings.view.mountPath)}`,
    ...(settings.view.disable ? ["# shellcheck disable=SC2034 # for user commands"] : []),
    ...(mounted ? [] : [`viewroot="\${viewbase}/view"`]),
    `configroot="\${viewbase}/config"`,
    "",
    ...ready,
    ...(settings.view.disable ? [] : [
      ...(quiet ? [] : ["", `echo "Flux install root: \${viewroot}"`]),
      "# Appended so that software in the application image comes first",
      `viewbin="\${viewroot}/bin"`,
      `export PATH="\${PATH}:\${viewbin}"`,
    ]),
    ...(mounted ? [] : [
      "",
      "# Software of the view goes to /opt/software (merged into it when it exists)",
      "if [ -e /opt/software ]; then",
      `  cp -R "\${viewbase}/software"/* /opt/software/ || true`,
      "else",
      `  cp -R "\${viewbase}/software" /opt/software || true`,
      "fi",
    ]),
  ];
}

/** `$NAME` or `${NAME}`: the references a flux.environment value may make to the environment. */
const VARIABLE_REFERENCE = /\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})/g;

/**
 * A flux.environment value as a bash double-quoted word: `$NAME` and `${NAME}` expand (the Go
 * operator wrote the value inside double quotes, so `PATH: $PATH:/opt/bin` extended the PATH),
 * everything else is literal (Go's double quotes also ran `$(...)` and backticks and then let the
 * sourced line split at blanks; here a value stays one word and never runs anything). An unset
 * variable expands to nothing, also under logging.strict.
 */
export function expandingWord(value: string): string {
  const literal = (text: string) => text.replace(/[\\"$`]/g, (c) => `\\${c}`);
  let out = "";
  let last = 0;
  for (const m of value.matchAll(VARIABLE_REFERENCE)) {
    out += literal(value.slice(last, m.index)) + `\${${m[1] ?? m[2]}:-}`;
    last = m.index! + m[0].length;
  }
  return `"${out + literal(value.slice(last))}"`;
}

/**
 * Python and helper files of the view (skipped when the view is disabled: the image brings Flux).
 * User environment values are written quoted into flux-view.sh, their variable references
 * expanded (expandingWord).
 */
export function viewPaths(settings: Settings): string[] {
  if (settings.view.disable) return [];
  const q = silencedWhen(settings.logging.quiet);
  const pythonPath = settings.view.pythonPath
    ? `"\${PYTHONPATH:-}:"${shellQuote(settings.view.pythonPath)}`
    : `"\${PYTHONPATH:-}:\${foundroot}/site-packages"`;
  // %q quotes the value again inside the file, so sourcing it restores the expanded value.
  const environment = settings.flux.environment.map(([key, value]) =>
    `printf 'export ${key}=%q\\n' ${expandingWord(value)} >> "\${viewbase}/flux-view.sh"`
  );
  const connect = [
    "#!/bin/bash",
    `. ${shellQuote(`${settings.view.mountPath}/flux-view.sh`)}`,
    `flux proxy "\${fluxsocket}" bash`,
  ].join("\n");
  const loadFluxion = [
    "flux module remove sched-simple",
    "flux module load sched-fluxion-resource",
    "flux module load sched-fluxion-qmanager",
  ].join("\n");

  return [
    "",
    "# The view's Python",
    `foundroot=$(find "\${viewroot}" -maxdepth 2 -type d -path "\${viewroot}/lib/python3*" | head -n 1)`,
    `pythonversion="\${viewroot}/bin/$(basename "\${foundroot}")"`,
    `echo "Python version: \${pythonversion}"${q}`,
    `echo "Python root: \${foundroot}"${q}`,
    "",
    "# A home for users without one",
    `if [ "\${HOME}" = "/" ]; then`,
    "  export HOME=/home/flux-operator",
    "  export USER=flux-operator",
    "fi",
    "",
    // Mounted, the view is where it was built (and read-only): its links resolve as they are.
    ...(settings.view.mounted ? [] : [
      "# The interpreter links of the view point to where it was built; drop them",
      `if [ -f "\${pythonversion}" ]; then`,
      `  rm -rf "\${viewroot}/bin/python3" "\${viewroot}/bin/python"`,
      `  ln -s "\${pythonversion}" "\${viewroot}/lib/python" || true`,
      `  ln -s "\${pythonversion}" "\${viewroot}/lib/python3" || true`,
      "fi",
      "",
    ]),
    `export PYTHONPATH=${pythonPath}`,
    `echo "PYTHONPATH is \${PYTHONPATH}"${q}`,
    `echo "PATH is \${PATH}"${q}`,
    ...(settings.flux.schedulerSimple ? [] : [
      "",
      "# Fluxion's rc scripts: Flux looks for rc1.d/ in each FLUX_RC_EXTRA directory",
      `export FLUX_RC_EXTRA="\${viewroot}/etc/flux"`,
    ]),
    "",
    "# Helper to switch a running instance from sched-simple to Fluxion",
    writeFileCommand(`"\${viewbase}/load-fluxion.sh"`, loadFluxion),
    "",
    "# Environment of the view, to source in interactive shells",
    "{",
    "  echo '#!/bin/bash'",
    `  printf 'export PATH=%q\\n' "\${PATH}"`,
    `  printf 'export PYTHONPATH=%q\\n' "\${PYTHONPATH}"`,
    `  printf 'export LD_LIBRARY_PATH=%q\\n' "\${LD_LIBRARY_PATH:-}:\${viewroot}/lib"`,
    `  printf 'export fluxsocket=%q\\n' "local://\${configroot}/run/flux/local"`,
    `} > "\${viewbase}/flux-view.sh"`,
    ...(environment.length > 0
      ? ["# flux.environment (may override the above)", ...environment]
      : []),
    "",
    "# The same environment, connected to the local broker",
    writeFileCommand(`"\${viewbase}/flux-connect.sh"`, connect),
  ];
}
