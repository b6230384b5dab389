/**
 * `commands.script`: a script the user writes instead of a command. It is written to
 * /tmp/custom-entrypoint.sh and run with bash. Like the Go operator, it goes through an unquoted
 * heredoc, so `$VAR` expands when the file is written and `\$VAR` when it runs; manifests written
 * for the Go operator rely on that (they escape `\${FLUX_TASK_RANK}`).
 */
import { unquotedHeredoc } from "./parts/shell.ts";

export const CUSTOM_SCRIPT_PATH = "/tmp/custom-entrypoint.sh";

export function customScript(script: string): string[] {
  const body = script.replace(/\n$/, "");
  return [
    "# commands.script replaces the command",
    unquotedHeredoc(CUSTOM_SCRIPT_PATH, body, "MINICLUSTER_SCRIPT_EOF"),
    `chmod +x ${CUSTOM_SCRIPT_PATH}`,
  ];
}
