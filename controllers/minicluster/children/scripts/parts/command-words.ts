/**
 * The Flux container's `command` as the words handed to `flux submit` (or, with `launcher`, to
 * `flux start`). The Go operator assigned it to a variable and expanded that unquoted
 * (`command="…"`, then `flux submit … ${command}`), so shell operators in it (`;`, `|`, `&`, `>`,
 * `<`, parentheses, `#`) reached the job as literal words instead of applying to the `flux start`
 * line (a `&` put the broker in the background, a `> out` caught the broker's output, a `; b` ran
 * `b` after Flux had exited). Here those operators are escaped, so they are words as in Go, while
 * quotes, `\`, `$VAR`, `$(…)` and backticks keep their shell meaning (Go's double-quoted
 * assignment expanded those too, and broke on a `"`).
 */

/** Characters that end a word or start a command or redirection outside quotes. */
const OPERATORS = new Set([";", "&", "|", "<", ">", "(", ")"]);

/** Index just past the quoted or substituted construct opening at `i`, or -1 if it never ends. */
function skipConstruct(text: string, i: number): number {
  const c = text[i];
  if (c === "'") {
    const end = text.indexOf("'", i + 1);
    return end < 0 ? -1 : end + 1;
  }
  if (c === "$" && text[i + 1] === "'") return skipEscaped(text, i + 2, "'");
  if (c === "`") return skipEscaped(text, i + 1, "`");
  if (c === '"') return skipDouble(text, i + 1);
  if (c === "$" && text[i + 1] === "(") return skipNested(text, i + 2, "(", ")");
  if (c === "$" && text[i + 1] === "{") return skipNested(text, i + 2, "{", "}");
  return i + 1;
}

/** Past the `close` that ends a construct whose contents may hold `\` escapes. */
function skipEscaped(text: string, i: number, close: string): number {
  for (let j = i; j < text.length; j++) {
    if (text[j] === "\\") j++;
    else if (text[j] === close) return j + 1;
  }
  return -1;
}

/** Past the `"` ending a double-quoted string (which may hold substitutions). */
function skipDouble(text: string, i: number): number {
  for (let j = i; j < text.length;) {
    const c = text[j];
    if (c === "\\") j += 2;
    else if (c === '"') return j + 1;
    else if (c === "`" || (c === "$" && (text[j + 1] === "(" || text[j + 1] === "{"))) {
      j = skipConstruct(text, j);
      if (j < 0) return -1;
    } else j++;
  }
  return -1;
}

/** Past the `close` matching an `open` already read, with quotes and nesting inside. */
function skipNested(text: string, i: number, open: string, close: string): number {
  let depth = 1;
  for (let j = i; j < text.length;) {
    const c = text[j];
    if (c === "\\") j += 2;
    else if (c === "'" || c === '"' || c === "`" || c === "$") {
      j = skipConstruct(text, j);
      if (j < 0) return -1;
    } else {
      if (c === open) depth++;
      if (c === close && --depth === 0) return j + 1;
      j++;
    }
  }
  return -1;
}

/**
 * `command` (one line, commandLine) with every shell operator outside quotes and substitutions
 * escaped, and a `#` that starts a word too. A command whose quotes or substitutions never close
 * would take the rest of the generated script into its words: it is split at blanks and each word
 * single-quoted instead (Go's word splitting of a literal). Also for `flux.optionFlags`, which Go
 * expanded the same way.
 */
export function commandWords(command: string): string {
  return escapeOperators(command) ?? literalWords(command);
}

/**
 * User words the Go operator put on the line as written (`commands.prefix`, `flux.submitCommand`):
 * kept as shell, unless their quotes or substitutions never close (then each blank-separated word
 * literally), so they cannot take the rest of the script into the line.
 */
export function shellWords(text: string): string {
  return escapeOperators(text) === undefined ? literalWords(text) : text;
}

/** `text` with its operators escaped, or undefined when a quote or substitution never closes. */
function escapeOperators(command: string): string | undefined {
  let out = "";
  for (let i = 0; i < command.length;) {
    const c = command[i];
    if (c === "\\") {
      if (i + 1 >= command.length) return undefined;
      out += command.slice(i, i + 2);
      i += 2;
    } else if (c === "'" || c === '"' || c === "`" || c === "$") {
      const end = skipConstruct(command, i);
      if (end < 0) return undefined;
      out += command.slice(i, end);
      i = end;
    } else if (OPERATORS.has(c) || (c === "#" && (i === 0 || /\s/.test(command[i - 1])))) {
      out += `\\${c}`;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

function literalWords(command: string): string {
  return command.split(/\s+/).filter((w) => w !== "").map((w) => `'${w.replaceAll("'", `'\\''`)}'`)
    .join(" ");
}
