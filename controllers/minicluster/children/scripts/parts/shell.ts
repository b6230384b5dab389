/**
 * Helpers for writing bash safely from TypeScript.
 *
 * Two kinds of text end up in the generated scripts:
 * - values the operator derives from the spec (names, namespace, paths, hostlists, option values,
 *   environment values): these are always passed through `shellQuote`, so no character in them can
 *   end a word, start a command substitution or inject a statement;
 * - commands the user wrote (`command`, `commands.*`, `submitCommand`, `optionFlags`, batch lines):
 *   these are shell by design and are inserted as written (`userBlock`).
 */

/** Characters that never need quoting in a bash word. */
const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * Quotes `value` as one bash word that expands to exactly `value`. Safe words stay bare (so the
 * scripts stay readable); everything else is single-quoted, with `'` written as `'\''`.
 * Newlines are kept literally inside the quotes. NUL cannot be represented in a bash string.
 */
export function shellQuote(value: string | number): string {
  const text = String(value);
  if (text.includes("\0")) throw new Error("a shell value cannot contain a NUL character");
  if (SAFE_WORD.test(text)) return text;
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * A command that writes `content` (plus a final newline) to the file `target`, where `target` is
 * already a shell word (quoted, or an expression like "${viewbase}/x"). printf with a quoted
 * argument is used instead of a heredoc so that no content can terminate the document early.
 */
export function writeFileCommand(target: string, content: string, append = false): string {
  const write = `printf '%s\\n' ${shellQuote(content)} ${append ? ">>" : ">"} ${target}`;
  // Literal `$` in the written file is intended; shellcheck would flag it as a mistake.
  return /[$`]/.test(content) ? `# shellcheck disable=SC2016 # written literally\n${write}` : write;
}

/**
 * `text` without a final line continuation: a last `\` (not itself escaped) would join whatever
 * the script has on the next line to the user's text (a heredoc's delimiter, `}` of a quiet block,
 * the line that records Flux's exit code), so it is dropped, as a continuation into nothing.
 */
function withoutTrailingContinuation(text: string): string {
  const trimmed = text.replace(/\s+$/, "");
  const backslashes = trimmed.length - trimmed.replace(/\\+$/, "").length;
  return backslashes % 2 === 1 ? trimmed.slice(0, -1).replace(/\s+$/, "") : trimmed;
}

/**
 * `content` as bash reads it in an unquoted heredoc: each `\` + newline removed (a `\` escaped by
 * another stays), and a final unescaped `\` dropped. Bash compares the joined lines with the
 * delimiter, so joining first lets the delimiter be chosen among the lines bash will see.
 */
function joinContinuations(content: string): string {
  let out = "";
  for (let i = 0; i < content.length; i++) {
    const c = content[i];
    if (c !== "\\") {
      out += c;
    } else if (content[i + 1] === "\n") {
      i++;
    } else if (i + 1 < content.length) {
      out += c + content[++i];
    }
  }
  return out;
}

/**
 * `cat > target <<DELIM` with `content`, which is user text meant to expand as in an unquoted
 * heredoc (the Go operator's way: `$VAR` when the file is written, `\$VAR` when it runs). The
 * content is joined as bash would (joinContinuations), so no continuation can reach the delimiter
 * line and no joined line can equal the delimiter and end the document early.
 */
export function unquotedHeredoc(target: string, content: string, base: string): string {
  const body = joinContinuations(content);
  const eof = heredocDelimiter(base, body);
  return [`cat > ${target} <<${eof}`, body, eof].join("\n");
}

/**
 * A heredoc delimiter that does not occur as a line of `content`, so that user text written
 * through an unquoted heredoc cannot end it early.
 */
export function heredocDelimiter(base: string, content: string): string {
  const lines = new Set(content.split("\n"));
  let delimiter = base;
  for (let n = 1; lines.has(delimiter); n++) delimiter = `${base}_${n}`;
  return delimiter;
}

/**
 * `echo` of a literal text (e.g. a user command shown in the log): quoted, so nothing in it runs;
 * shellcheck is told that a `$` in it is meant literally.
 */
export function echoLiteral(text: string, suffix = ""): string[] {
  return withLiteralNote(text, `echo ${shellQuote(text)}${suffix}`);
}

/**
 * `line`, which contains `text` single-quoted, preceded by a note telling shellcheck that a `$`
 * or backtick in the quotes is meant literally (SC2016) when there is one.
 */
function withLiteralNote(text: string, line: string): string[] {
  return /[$`]/.test(text) ? ["# shellcheck disable=SC2016 # literal text", line] : [line];
}

/**
 * A user-given block of shell (e.g. `commands.pre`) as written, or nothing when it is empty.
 * When quiet, the whole block (not only its last line, as with the Go operator) is silenced by
 * grouping it in braces.
 */
export function userBlock(text: string | undefined, quiet: boolean, stderrToo = true): string[] {
  const body = withoutTrailingContinuation(text ?? "");
  if (body.trim() === "") return [];
  if (!quiet) return [body];
  return [["{", body, `} > /dev/null${stderrToo ? " 2>&1" : ""}`].join("\n")];
}

/**
 * Indents the lines of a block by two spaces. Entries spanning several lines (user text, heredocs,
 * multi-line quoted strings) are kept as written: indenting would change their content.
 */
export function indent(lines: string[]): string[] {
  return lines.map((line) => line === "" || line.includes("\n") ? line : `  ${line}`);
}

/** `" > /dev/null 2>&1"` when quiet, so informational output can be silenced. */
export function silencedWhen(quiet: boolean): string {
  return quiet ? " > /dev/null 2>&1" : "";
}

/**
 * A user command as one line of shell words. A command written over several lines in YAML is
 * joined the way the Go operator's word splitting of `${command}` joins it (line continuations
 * first, then newlines as spaces).
 */
export function commandLine(command: string | undefined): string {
  return withoutTrailingContinuation(
    (command ?? "").replace(/[ \t]*\\\r?\n\s*/g, " ").replace(/\s*\r?\n\s*/g, " ").trim(),
  );
}

/** Joins script lines into a script ending in one newline, without runs of blank lines. */
export function joinScript(lines: string[]): string {
  const out: string[] = [];
  for (const line of lines) {
    if (line === "" && (out.length === 0 || out[out.length - 1] === "")) continue;
    out.push(line);
  }
  while (out.length > 0 && out[out.length - 1] === "") out.pop();
  return out.join("\n") + "\n";
}
