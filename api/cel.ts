/**
 * CEL (Common Expression Language) for the CRD's x-kubernetes-validations rules, so that a
 * MiniCluster can be checked against them without an API server (`render`): an adapter over
 * `@marcbachmann/cel-js`, set up as the API server sets up its CEL (optional types on, aggregate
 * literals homogeneous), with `self` and `oldSelf` the declared variables.
 *
 * JSON integers that fit in int64 are CEL ints (overflow an error) and other numbers doubles, as
 * the API server decodes them (api/go_number.ts); results come back as JSON values. A rule that
 * calls a function the library lacks (the API server's Kubernetes libraries: quantity(),
 * isSorted(), ...) or does not type-check is a CelError at compile time, so what this cannot
 * evaluate is known up front rather than misjudged. As in CEL, `&&` and `||` are commutative over
 * errors (`false && error` is false) and selecting a field that is absent is an error.
 *
 * Only `render` loads this (api/crd_validation.ts, behind its dynamic import in mod.ts): the
 * operator's own path never does.
 */
import {
  Environment,
  EvaluationError,
  ParseError,
  TypeError as CelTypeError,
} from "@marcbachmann/cel-js";
import { isInt64 } from "./go_number.ts";

export class CelError extends Error {
  override name = "CelError";
}

type Value = unknown;
type Env = ReadonlyMap<string, Value>;
/** A compiled expression. */
export type Program = (env: Env) => Value;

const environment = new Environment({ enableOptionalTypes: true })
  .registerVariable("self", "dyn")
  .registerVariable("oldSelf", "dyn");

/** A JSON value as CEL sees it: the numbers Go decodes as int64 as int (bigint). */
function toCel(v: Value): Value {
  if (typeof v === "number" && isInt64(v)) return BigInt(v);
  if (Array.isArray(v)) return v.map(toCel);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toCel(x)]));
  }
  return v;
}

/** A CEL result as a JSON value: ints back to numbers, maps to objects. */
function fromCel(v: Value): Value {
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v)) return v.map(fromCel);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, fromCel(x)]));
  if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fromCel(x)]));
  }
  return v;
}

/** The library's errors as CelError, with the message alone (not the source excerpt). */
function celError(e: unknown): unknown {
  if (e instanceof ParseError || e instanceof EvaluationError || e instanceof CelTypeError) {
    return new CelError(e.summary);
  }
  return e;
}

/** Compiles a CEL expression; throws CelError for one that does not parse or type-check. */
export function compileCel(source: string): Program {
  let evaluate;
  try {
    evaluate = environment.parse(source);
  } catch (e) {
    throw celError(e);
  }
  const checked = evaluate.check();
  if (!checked.valid) throw new CelError(checked.error?.summary ?? "does not type-check");
  return (env) => {
    const context: Record<string, Value> = {};
    for (const [name, value] of env) context[name] = toCel(value);
    try {
      return fromCel(evaluate(context));
    } catch (e) {
      throw celError(e);
    }
  };
}
