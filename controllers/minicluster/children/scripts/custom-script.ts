/**
 * `commands.script`: a script the user writes instead of a command. It is written to
 * /tmp/custom-entrypoint.sh and run with bash. Like the Go operator, it goes through an unquoted
 * heredoc, so `$VAR` expands when the file is written and `\$VAR` when it runs; manifests written
 * for the Go operator rely on that (they escape `\${FLUX_TASK_RANK}`).
 */
import { heredocDelimiter } from "./shell.ts";

export const CUSTOM_SCRIPT_PATH = "/tmp/custom-entrypoint.sh";

export function customScript(script: string): string[] {
  const body = script.replace(/\n$/, "");
  const eof = heredocDelimiter("MINICLUSTER_SCRIPT_EOF", body);
  return [
    "# commands.script replaces the command",
    [`cat > ${CUSTOM_SCRIPT_PATH} <<${eof}`, body, eof].join("\n"),
    `chmod +x ${CUSTOM_SCRIPT_PATH}`,
  ];
}
