/**
 * The part of CEL (Common Expression Language) that the CRD's x-kubernetes-validations rules use,
 * so that a MiniCluster can be checked against them without an API server (`render`): literals,
 * field selection, `has()`, the logical, comparison and arithmetic operators, `?:`, `in`, the
 * macros `all`, `exists`, `exists_one`, `filter`, `map` and the functions `size`, `string`, `int`,
 * `matches`, `startsWith`, `endsWith`, `contains`. Anything else is a CelError at compile time, so
 * a rule this cannot evaluate is known up front rather than misjudged.
 *
 * As in CEL, `&&` and `||` are commutative over errors (`false && error` is false) and selecting
 * a field that is absent is an error.
 */

export class CelError extends Error {
  override name = "CelError";
}

type Value = unknown;
type Env = ReadonlyMap<string, Value>;
/** A compiled expression. */
export type Program = (env: Env) => Value;

interface Token {
  kind: "num" | "str" | "id" | "op";
  text: string;
  value?: Value;
}

const OPERATORS = [
  "==",
  "!=",
  "<=",
  ">=",
  "&&",
  "||",
  "<",
  ">",
  "!",
  "+",
  "-",
  "*",
  "/",
  "%",
  "?",
  ":",
  ".",
  ",",
  "(",
  ")",
  "[",
  "]",
];

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const num = /^\d+(\.\d+)?/.exec(src.slice(i));
    if (num) {
      tokens.push({ kind: "num", text: num[0], value: Number(num[0]) });
      i += num[0].length;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
    if (id) {
      tokens.push({ kind: "id", text: id[0] });
      i += id[0].length;
      continue;
    }
    if (c === "'" || c === '"') {
      let j = i + 1;
      let text = "";
      while (j < src.length && src[j] !== c) {
        if (src[j] === "\\") {
          const escaped: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\" };
          text += escaped[src[j + 1]] ?? src[j + 1];
          j += 2;
        } else text += src[j++];
      }
      if (j >= src.length) throw new CelError(`unterminated string at ${i}`);
      tokens.push({ kind: "str", text: src.slice(i, j + 1), value: text });
      i = j + 1;
      continue;
    }
    const op = OPERATORS.find((o) => src.startsWith(o, i));
    if (!op) throw new CelError(`unexpected character ${JSON.stringify(c)} at ${i}`);
    tokens.push({ kind: "op", text: op });
    i += op.length;
  }
  return tokens;
}

const isMap = (v: Value): v is Record<string, Value> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

function sizeOf(v: Value): number {
  if (typeof v === "string") return [...v].length;
  if (Array.isArray(v)) return v.length;
  if (isMap(v)) return Object.keys(v).length;
  throw new CelError(`no such overload: size(${typeof v})`);
}

function equal(a: Value, b: Value): boolean {
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  }
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && equal(a[k], b[k]));
  }
  return a === b;
}

function select(obj: Value, field: string): Value {
  if (!isMap(obj) || !(field in obj)) throw new CelError(`no such key: ${field}`);
  return obj[field];
}

function bool(v: Value): boolean {
  if (typeof v !== "boolean") throw new CelError(`no matching overload: expected bool`);
  return v;
}

/** Elements a macro ranges over: a list's items, a map's keys. */
function range(v: Value): Value[] {
  if (Array.isArray(v)) return v;
  if (isMap(v)) return Object.keys(v);
  throw new CelError("no matching overload: macro over a non-collection");
}

const MACROS = new Set(["all", "exists", "exists_one", "filter", "map"]);

function macro(name: string, target: Program, variable: string, body: Program): Program {
  return (env) => {
    const items = range(target(env));
    const run = (item: Value) => body(new Map([...env, [variable, item]]));
    switch (name) {
      case "all": {
        let error: unknown;
        for (const item of items) {
          try {
            if (!bool(run(item))) return false;
          } catch (e) {
            error ??= e;
          }
        }
        if (error) throw error;
        return true;
      }
      case "exists": {
        let error: unknown;
        for (const item of items) {
          try {
            if (bool(run(item))) return true;
          } catch (e) {
            error ??= e;
          }
        }
        if (error) throw error;
        return false;
      }
      case "exists_one":
        return items.filter((item) => bool(run(item))).length === 1;
      case "filter":
        return items.filter((item) => bool(run(item)));
      default:
        return items.map(run);
    }
  };
}

function method(name: string, target: Program, args: Program[]): Program {
  const want = (n: number) => {
    if (args.length !== n) throw new CelError(`${name}() takes ${n} argument(s)`);
  };
  const str = (v: Value) => {
    if (typeof v !== "string") throw new CelError(`no matching overload: ${name} on non-string`);
    return v;
  };
  switch (name) {
    case "size":
      want(0);
      return (env) => sizeOf(target(env));
    case "matches":
      want(1);
      return (env) => new RegExp(str(args[0](env)), "u").test(str(target(env)));
    case "startsWith":
      want(1);
      return (env) => str(target(env)).startsWith(str(args[0](env)));
    case "endsWith":
      want(1);
      return (env) => str(target(env)).endsWith(str(args[0](env)));
    case "contains":
      want(1);
      return (env) => str(target(env)).includes(str(args[0](env)));
    default:
      throw new CelError(`unsupported function ${name}()`);
  }
}

function func(name: string, args: Program[]): Program {
  if (args.length !== 1) throw new CelError(`${name}() takes 1 argument`);
  const [arg] = args;
  switch (name) {
    case "size":
      return (env) => sizeOf(arg(env));
    case "string":
      return (env) => String(arg(env));
    case "int":
      return (env) => Math.trunc(Number(arg(env)));
    default:
      throw new CelError(`unsupported function ${name}()`);
  }
}

function arithmetic(op: string, a: Value, b: Value): Value {
  if (op === "+" && typeof a === "string" && typeof b === "string") return a + b;
  if (op === "+" && Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
  if (typeof a !== "number" || typeof b !== "number") {
    throw new CelError(`no matching overload for ${op}`);
  }
  switch (op) {
    case "+":
      return a + b;
    case "-":
      return a - b;
    case "*":
      return a * b;
    case "/":
      if (b === 0) throw new CelError("division by zero");
      return Math.trunc(a / b);
    default:
      if (b === 0) throw new CelError("modulus by zero");
      return a % b;
  }
}

function compare(op: string, a: Value, b: Value): boolean {
  if (op === "==") return equal(a, b);
  if (op === "!=") return !equal(a, b);
  if (op === "in") {
    if (Array.isArray(b)) return b.some((x) => equal(x, a));
    if (isMap(b)) return typeof a === "string" && a in b;
    throw new CelError("no matching overload for in");
  }
  if (typeof a !== typeof b || (typeof a !== "number" && typeof a !== "string")) {
    throw new CelError(`no matching overload for ${op}`);
  }
  const [x, y] = [a as number | string, b as number | string];
  return op === "<" ? x < y : op === "<=" ? x <= y : op === ">" ? x > y : x >= y;
}

class Parser {
  #pos = 0;
  constructor(readonly tokens: Token[]) {}

  #peek(text?: string): Token | undefined {
    const t = this.tokens[this.#pos];
    return text === undefined || (t && t.kind === "op" && t.text === text) ||
        (t && t.kind === "id" && t.text === text)
      ? t
      : undefined;
  }
  #take(text?: string): Token {
    const t = this.tokens[this.#pos];
    if (!t || (text !== undefined && t.text !== text)) {
      throw new CelError(`expected ${text ?? "a token"} at token ${this.#pos}`);
    }
    this.#pos++;
    return t;
  }

  parse(): Program {
    const e = this.#conditional();
    if (this.#pos < this.tokens.length) {
      throw new CelError(`unexpected ${this.tokens[this.#pos].text}`);
    }
    return e;
  }

  #conditional(): Program {
    const cond = this.#or();
    if (!this.#peek("?")) return cond;
    this.#take("?");
    const then = this.#conditional();
    this.#take(":");
    const otherwise = this.#conditional();
    return (env) => (bool(cond(env)) ? then(env) : otherwise(env));
  }

  #logical(op: "||" | "&&", next: () => Program): Program {
    let left = next();
    while (this.#peek(op)) {
      this.#take(op);
      const [l, r] = [left, next()];
      // The value that decides the result wins over an error on the other side.
      const decisive = op === "||";
      left = (env) => {
        let error: unknown;
        try {
          if (bool(l(env)) === decisive) return decisive;
        } catch (e) {
          error = e;
        }
        if (bool(r(env)) === decisive) return decisive;
        if (error) throw error;
        return !decisive;
      };
    }
    return left;
  }
  #or = (): Program => this.#logical("||", this.#and);
  #and = (): Program => this.#logical("&&", () => this.#relation());

  #relation(): Program {
    const left = this.#additive();
    const t = this.#peek();
    if (
      t && ((t.kind === "op" && ["==", "!=", "<", "<=", ">", ">="].includes(t.text)) ||
        (t.kind === "id" && t.text === "in"))
    ) {
      this.#take();
      const right = this.#additive();
      return (env) => compare(t.text, left(env), right(env));
    }
    return left;
  }

  #additive(): Program {
    let left = this.#multiplicative();
    for (let t = this.#peek(); t && (t.text === "+" || t.text === "-"); t = this.#peek()) {
      if (t.kind !== "op") break;
      this.#take();
      const [l, r, op] = [left, this.#multiplicative(), t.text];
      left = (env) => arithmetic(op, l(env), r(env));
    }
    return left;
  }

  #multiplicative(): Program {
    let left = this.#unary();
    for (let t = this.#peek(); t && ["*", "/", "%"].includes(t.text); t = this.#peek()) {
      if (t.kind !== "op") break;
      this.#take();
      const [l, r, op] = [left, this.#unary(), t.text];
      left = (env) => arithmetic(op, l(env), r(env));
    }
    return left;
  }

  #unary(): Program {
    if (this.#peek("!")) {
      this.#take();
      const e = this.#unary();
      return (env) => !bool(e(env));
    }
    if (this.#peek("-")) {
      this.#take();
      const e = this.#unary();
      return (env) => arithmetic("-", 0, e(env));
    }
    return this.#member();
  }

  #member(): Program {
    let target = this.#primary();
    while (true) {
      if (this.#peek(".")) {
        this.#take();
        const name = this.#take().text;
        if (!this.#peek("(")) {
          const t = target;
          target = (env) => select(t(env), name);
          continue;
        }
        this.#take("(");
        if (MACROS.has(name)) {
          const variable = this.#take().text;
          this.#take(",");
          const body = this.#conditional();
          this.#take(")");
          target = macro(name, target, variable, body);
        } else {
          target = method(name, target, this.#args());
        }
      } else if (this.#peek("[")) {
        this.#take();
        const index = this.#conditional();
        this.#take("]");
        const t = target;
        target = (env) => {
          const obj = t(env);
          const i = index(env);
          if (Array.isArray(obj) && typeof i === "number") {
            if (i < 0 || i >= obj.length) throw new CelError(`index out of range: ${i}`);
            return obj[i];
          }
          return select(obj, String(i));
        };
      } else return target;
    }
  }

  /** Arguments after `(`, through `)`. */
  #args(): Program[] {
    const args: Program[] = [];
    while (!this.#peek(")")) {
      args.push(this.#conditional());
      if (!this.#peek(")")) this.#take(",");
    }
    this.#take(")");
    return args;
  }

  #primary(): Program {
    const t = this.#take();
    if (t.kind === "num" || t.kind === "str") return () => t.value;
    if (t.kind === "op" && t.text === "(") {
      const e = this.#conditional();
      this.#take(")");
      return e;
    }
    if (t.kind === "op" && t.text === "[") {
      const items: Program[] = [];
      while (!this.#peek("]")) {
        items.push(this.#conditional());
        if (!this.#peek("]")) this.#take(",");
      }
      this.#take("]");
      return (env) => items.map((i) => i(env));
    }
    if (t.kind !== "id") throw new CelError(`unexpected ${t.text}`);
    if (t.text === "true" || t.text === "false") return () => t.text === "true";
    if (t.text === "null") return () => null;
    if (this.#peek("(")) {
      this.#take("(");
      if (t.text === "has") return this.#has();
      return func(t.text, this.#args());
    }
    const name = t.text;
    return (env) => {
      if (!env.has(name)) throw new CelError(`undeclared reference to ${name}`);
      return env.get(name);
    };
  }

  /** `has(a.b.c)`: whether the last field is present in what the rest selects. */
  #has(): Program {
    const start = this.#pos;
    let depth = 0;
    let end = start;
    for (; end < this.tokens.length; end++) {
      const text = this.tokens[end].text;
      if (text === "(" || text === "[") depth++;
      if (text === ")" || text === "]") {
        if (depth === 0) break;
        depth--;
      }
    }
    const field = this.tokens[end - 1];
    if (end - start < 3 || this.tokens[end - 2].text !== "." || field.kind !== "id") {
      throw new CelError("has() needs a field selection");
    }
    const operand = new Parser(this.tokens.slice(start, end - 2)).parse();
    this.#pos = end;
    this.#take(")");
    return (env) => {
      const obj = operand(env);
      if (!isMap(obj)) throw new CelError(`has() on a non-object`);
      return field.text in obj;
    };
  }
}

/** Compiles a CEL expression of the supported subset; throws CelError for anything else. */
export function compileCel(source: string): Program {
  return new Parser(tokenize(source)).parse();
}
