/**
 * What the API server checks when a MiniCluster is created, without an API server: the CRD's
 * structural defaults, its OpenAPI schema and its x-kubernetes-validations rules (api/cel.ts), in
 * the API server's order and with its messages (`spec.size: Invalid value: -3: spec.size in body
 * should be greater than or equal to 1`), so that `render` refuses what `kubectl apply` would and
 * says it the same way. The wording is kube-apiserver 1.37's (k8s.io/apimachinery field errors,
 * kube-openapi's format checks); tests/integration/render_messages_test.ts compares the two.
 *
 * Left out: the rules' cost budget, list-type set (the CRD has none) and the object metadata
 * checks other than the name's.
 */
import type { OpenApiSchema } from "./openapi_schema.ts";
import { CelError, compileCel, type Program } from "./cel.ts";
import { goFloatText, isInt64 } from "./go_number.ts";

export type { OpenApiSchema };

/** A field error as the API server words it (k8s.io/apimachinery field.Error). */
interface FieldError {
  /** `spec.size`; `<nil>` for the object itself, as the API server prints it. */
  field: string;
  type:
    | "Invalid"
    | "TypeInvalid"
    | "Required"
    | "Forbidden"
    | "TooLong"
    | "TooMany"
    | "NotSupported"
    | "Duplicate";
  /** The offending value, when the message shows one. */
  value?: unknown;
  detail?: string;
}

type Json = unknown;
type JsonMap = Record<string, Json>;

const isMap = (v: Json): v is JsonMap => v !== null && typeof v === "object" && !Array.isArray(v);

/** JSON type of a value, as the schema names types. */
function typeOf(v: Json): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return isInt64(v) ? "integer" : "number";
  return typeof v;
}

/**
 * A value as Go's field errors print it: strings quoted, numbers and booleans bare, anything else
 * as JSON (Go's encoder sorts object keys).
 */
function goValue(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (v === null || v === undefined) return "null";
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v, (_, x) => isMap(x) ? Object.fromEntries(Object.entries(x).sort()) : x);
}

const TYPE_TITLES: Record<FieldError["type"], string> = {
  Invalid: "Invalid value",
  TypeInvalid: "Invalid value",
  Required: "Required value",
  Forbidden: "Forbidden",
  TooLong: "Too long",
  TooMany: "Too many",
  NotSupported: "Unsupported value",
  Duplicate: "Duplicate value",
};

/** `field: body`, the text of one cause of the API server's Invalid status. */
function fieldErrorText(e: FieldError): string {
  const title = TYPE_TITLES[e.type];
  const shown = ["Required", "Forbidden", "TooLong"].includes(e.type) ||
      !("value" in e)
    ? title
    : `${title}: ${goValue(e.value)}`;
  return `${e.field}: ${shown}${e.detail ? `: ${e.detail}` : ""}`;
}

/** Fills in the schema's defaults where a field is absent, and drops nulls it does not allow. */
export function withSchemaDefaults(value: Json, schema: OpenApiSchema): Json {
  if (Array.isArray(value)) {
    return schema.items ? value.map((v) => withSchemaDefaults(v, schema.items!)) : value;
  }
  if (!isMap(value)) return value;
  const out: JsonMap = {};
  const additional = typeof schema.additionalProperties === "object"
    ? schema.additionalProperties
    : undefined;
  for (const [k, v] of Object.entries(value)) {
    const s = schema.properties?.[k] ?? additional;
    if (v === null && s && !s.nullable) {
      if (s.default !== undefined) out[k] = withSchemaDefaults(structuredClone(s.default), s);
      continue;
    }
    out[k] = s ? withSchemaDefaults(v, s) : v;
  }
  for (const [k, s] of Object.entries(schema.properties ?? {})) {
    if (!(k in out) && s.default !== undefined) {
      out[k] = withSchemaDefaults(structuredClone(s.default), s);
    }
  }
  return out;
}

const childPath = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Integer formats whose range kube-openapi checks (other formats are not checked). */
const INTEGER_FORMATS = new Set(["int32", "int64"]);
const INTEGER_RANGES: Record<string, [number, number]> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  int64: [-(2 ** 63), 2 ** 63 - 1],
};

/** kube-openapi's name of the format of a decoded JSON value ("" when it has none). */
function dataFormat(v: Json): string {
  if (typeof v !== "number") return "";
  return isInt64(v) ? "int64" : "float64";
}

/**
 * The checks of an `integer` field with an int32 or int64 format on a value that is not a list or
 * string: a value of another type is refused naming the format, and a number out of the format's
 * range (a fraction included) gets a second error without a field.
 */
function integerFormatErrors(value: Json, schema: OpenApiSchema, path: string): FieldError[] {
  const format = schema.format ?? "";
  if (schema.type !== "integer" || !INTEGER_FORMATS.has(format)) return [];
  if (value === null || typeof value === "string" || Array.isArray(value)) return [];
  const errors: FieldError[] = [];
  const integral = typeof value === "number" && isInt64(value);
  if (!integral) {
    const actual = dataFormat(value);
    errors.push({
      field: path || "<nil>",
      type: "TypeInvalid",
      value: actual,
      detail: `${path} in body must be of type ${format}: "${actual}"`,
    });
  }
  if (typeof value === "number") {
    const [min, max] = INTEGER_RANGES[format];
    if (!Number.isInteger(value) || value < min || value > max) {
      errors.push({
        field: "<nil>",
        type: "Invalid",
        value: "",
        detail: `Checked value must be of type integer with format ${format} in ${path}`,
      });
    }
  }
  return errors;
}

/** The OpenAPI checks of kube-openapi's validator, as the apiextensions server reports them. */
function schemaErrors(value: Json, schema: OpenApiSchema, path: string): FieldError[] {
  const field = path || "<nil>";
  const errors: FieldError[] = [];
  const formatErrors = integerFormatErrors(value, schema, path);
  if (formatErrors.some((e) => e.type === "TypeInvalid")) return formatErrors;
  errors.push(...formatErrors);
  const actual = typeOf(value);
  const intOrString = schema["x-kubernetes-int-or-string"] === true;
  const typeOk = intOrString
    ? actual === "integer" || actual === "string"
    : !schema.type || schema.type === actual || (schema.type === "number" && actual === "integer");
  if (!typeOk) {
    const wanted = intOrString ? "integer,string" : schema.type;
    return [{
      field,
      type: "TypeInvalid",
      value: actual,
      detail: `${path} in body must be of type ${wanted}: "${actual}"`,
    }];
  }
  if (schema.enum && !schema.enum.some((e) => e === value)) {
    errors.push({
      field,
      type: "NotSupported",
      value,
      detail: "supported values: " +
        schema.enum.map((e) => JSON.stringify(typeof e === "string" ? e : JSON.stringify(e)))
          .join(", "),
    });
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (schema.maxLength !== undefined && length > schema.maxLength) {
      errors.push({
        field,
        type: "TooLong",
        detail: `may not be more than ${schema.maxLength} bytes`,
      });
    }
    if (schema.minLength !== undefined && length < schema.minLength) {
      errors.push({
        field,
        type: "Invalid",
        value,
        detail: `${path} in body should be at least ${schema.minLength} chars long`,
      });
    }
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) {
      errors.push({
        field,
        type: "Invalid",
        value,
        detail: `${path} in body should match '${schema.pattern}'`,
      });
    }
  }
  if (typeof value === "number") {
    if (schema.maximum !== undefined && value > schema.maximum) {
      errors.push({
        field,
        type: "Invalid",
        value,
        detail: `${path} in body should be less than or equal to ${schema.maximum}`,
      });
    }
    if (schema.minimum !== undefined && value < schema.minimum) {
      errors.push({
        field,
        type: "Invalid",
        value,
        detail: `${path} in body should be greater than or equal to ${schema.minimum}`,
      });
    }
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      errors.push({
        field,
        type: "TooMany",
        value: value.length,
        detail: `must have at most ${schema.maxItems} items`,
      });
    }
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      errors.push({
        field,
        type: "Invalid",
        value: value.length,
        detail: `${path} in body should have at least ${schema.minItems} items`,
      });
    }
    if (schema.items) {
      value.forEach((item, i) =>
        errors.push(...schemaErrors(item, schema.items!, `${path}[${i}]`))
      );
    }
  }
  if (isMap(value)) {
    const keys = Object.keys(value);
    if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) {
      errors.push({
        field,
        type: "TooMany",
        value: keys.length,
        detail: `must have at most ${schema.maxProperties} items`,
      });
    }
    for (const name of schema.required ?? []) {
      if (!(name in value)) errors.push({ field: childPath(path, name), type: "Required" });
    }
    const additional = typeof schema.additionalProperties === "object"
      ? schema.additionalProperties
      : undefined;
    for (const k of keys) {
      // Fields the schema does not know are pruned by the API server, not refused.
      const s = schema.properties?.[k] ?? additional;
      if (s) errors.push(...schemaErrors(value[k], s, childPath(path, k)));
    }
  }
  return errors;
}

const compiled = new Map<string, Program | CelError>();

function program(rule: string): Program | CelError {
  let p = compiled.get(rule);
  if (!p) {
    try {
      p = compileCel(rule);
    } catch (e) {
      if (!(e instanceof CelError)) throw e;
      p = e;
    }
    compiled.set(rule, p);
  }
  return p;
}

/**
 * Calls `visit` for every node of `value` that has a schema, depth first, with its path as the
 * API server's post-schema checks name it (field.Path: a map's entries as volumes[data]).
 */
function walk(
  value: Json,
  schema: OpenApiSchema,
  path: string,
  visit: (value: Json, schema: OpenApiSchema, path: string) => void,
): void {
  visit(value, schema, path);
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => walk(item, schema.items!, `${path}[${i}]`, visit));
  }
  if (isMap(value)) {
    const additional = typeof schema.additionalProperties === "object"
      ? schema.additionalProperties
      : undefined;
    for (const [k, v] of Object.entries(value)) {
      const [s, at] = schema.properties?.[k]
        ? [schema.properties[k], childPath(path, k)]
        : [additional, `${path}[${k}]`];
      if (s) walk(v, s, at, visit);
    }
  }
}

/** A node's x-kubernetes-validations rules that do not hold. */
function ruleErrors(value: Json, schema: OpenApiSchema, path: string): FieldError[] {
  const errors: FieldError[] = [];
  for (const rule of schema["x-kubernetes-validations"] ?? []) {
    const p = program(rule.rule);
    // A rule outside the supported part of CEL is left to the API server.
    if (p instanceof CelError) continue;
    let ok: unknown;
    let failure = "";
    try {
      ok = p(new Map([["self", value]]));
    } catch (e) {
      if (!(e instanceof CelError)) throw e;
      failure = e.message;
    }
    if (ok === true) continue;
    const relative = rule.fieldPath?.replace(/^\./, "");
    const field = (relative ? childPath(path, relative) : path) || "<nil>";
    const message = (rule.message ?? `failed rule: ${rule.rule}`).trim();
    const detail = failure ? `${message}: ${failure}` : message;
    const type = rule.reason === "FieldValueForbidden"
      ? "Forbidden"
      : rule.reason === "FieldValueRequired"
      ? "Required"
      : "Invalid";
    // The API server shows no value for a rule's failure.
    errors.push({ field, type, detail });
  }
  return errors;
}

/** A list of x-kubernetes-list-type map with two items of the same keys: each second one. */
function listMapErrors(value: Json, schema: OpenApiSchema, path: string): FieldError[] {
  const keyFields = schema["x-kubernetes-list-map-keys"] as string[] | undefined;
  if (schema["x-kubernetes-list-type"] !== "map" || !keyFields || !Array.isArray(value)) return [];
  const notObject = value.findIndex((x) => x !== null && !isMap(x));
  if (notObject >= 0) {
    const field = `${path}[${notObject}]`;
    const detail = "must be an object for an array of list-type map";
    return [{ field, type: "Invalid", value: value[notObject], detail }];
  }
  const seen = new Map<string, number>();
  const errors: FieldError[] = [];
  value.forEach((x, i) => {
    const key: JsonMap = {};
    for (const k of keyFields) if (isMap(x) && k in x) key[k] = x[k];
    const id = JSON.stringify(Object.keys(key).sort().map((k) => [k, key[k]]));
    const times = seen.get(id) ?? 0;
    seen.set(id, times + 1);
    if (times === 1) {
      errors.push({ field: `${path}[${i}]`, type: "Duplicate", value: key });
    }
  });
  return errors;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The API server's checks of metadata.name for a custom resource (a DNS subdomain). */
function nameErrors(obj: Json): FieldError[] {
  const name = isMap(obj) && isMap(obj.metadata) ? obj.metadata.name : undefined;
  if (name === undefined || name === "") {
    return [{
      field: "metadata.name",
      type: "Required",
      detail: "name or generateName is required",
    }];
  }
  if (typeof name !== "string") return [];
  const errors: FieldError[] = [];
  if (name.length > 253) {
    errors.push({
      field: "metadata.name",
      type: "Invalid",
      value: name,
      detail: "must be no more than 253 characters",
    });
  }
  if (!DNS_SUBDOMAIN.test(name)) {
    errors.push({
      field: "metadata.name",
      type: "Invalid",
      value: name,
      detail:
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, " +
        "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', " +
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    });
  }
  return errors;
}

/** Go's %v of a decoded JSON value. */
function goPrint(v: Json): string {
  if (v === null) return "<nil>";
  if (Array.isArray(v)) return `[${v.map(goPrint).join(" ")}]`;
  if (isMap(v)) {
    return `map[${Object.keys(v).sort().map((k) => `${k}:${goPrint(v[k])}`).join(" ")}]`;
  }
  if (typeof v === "number" && !isInt64(v)) return goFloatText(v);
  return String(v);
}

/** Go's %T of a decoded JSON value. */
function goType(v: Json): string {
  if (Array.isArray(v)) return "[]interface {}";
  if (isMap(v)) return "map[string]interface {}";
  if (typeof v === "number") return isInt64(v) ? "int64" : "float64";
  return typeof v === "string" ? "string" : "bool";
}

const MAX_INT32 = 2147483647;

/** The scale subresource's check of the replicas field (an int32, not negative). */
function scaleErrors(obj: Json, specReplicasPath: string): FieldError[] {
  if (!specReplicasPath) return [];
  let v: Json = obj;
  for (const k of specReplicasPath.replace(/^\./, "").split(".")) {
    if (!isMap(v) || !(k in v)) return [];
    v = v[k];
  }
  const field = specReplicasPath;
  if (typeof v !== "number" || !isInt64(v)) {
    const detail = `${field} accessor error: ${goPrint(v)} is of the type ${goType(v)}, ` +
      "expected int64";
    return [{ field, type: "Invalid", value: 0, detail }];
  }
  if (v < 0) {
    return [{ field, type: "Invalid", value: v, detail: "should be a non-negative integer" }];
  }
  if (v > MAX_INT32) {
    return [{
      field,
      type: "Invalid",
      value: v,
      detail: `should be less than or equal to ${MAX_INT32}`,
    }];
  }
  return [];
}

/**
 * Fields the schema does not declare, which `kubectl apply` (strict field validation) refuses: what
 * the API server's pruning would drop, found as it walks, whatever the value's type (a map where a
 * list belongs has only undeclared fields). The root's metadata is the API server's own.
 */
function unknownFields(value: Json, schema: OpenApiSchema | undefined, path = ""): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((item, i) => unknownFields(item, schema?.items, `${path}[${i}]`));
  }
  if (!isMap(value) || schema?.["x-kubernetes-preserve-unknown-fields"] === true) return [];
  const additional = typeof schema?.additionalProperties === "object"
    ? schema.additionalProperties
    : undefined;
  return Object.entries(value).flatMap(([k, v]) => {
    if (path === "" && ["apiVersion", "kind", "metadata"].includes(k)) return [];
    const s = schema?.properties?.[k] ?? additional;
    return s ? unknownFields(v, s, childPath(path, k)) : [childPath(path, k)];
  });
}

/** Errors that make the API server skip the validation rules (they could not be evaluated). */
const BLOCKING: ReadonlySet<FieldError["type"]> = new Set([
  "TypeInvalid",
  "NotSupported",
  "Required",
  "TooLong",
  "TooMany",
]);

/**
 * The API server's answer to creating `obj` under `schema`, as the causes of its Invalid status
 * (`field: message`), in its order; empty when it would be accepted.
 */
export function crdValidationErrors(
  obj: Json,
  schema: OpenApiSchema,
  specReplicasPath = "",
): string[] {
  const defaulted = withSchemaDefaults(obj, schema);
  const errors = [
    ...nameErrors(defaulted),
    ...schemaErrors(defaulted, schema, ""),
    ...scaleErrors(defaulted, specReplicasPath),
  ];
  walk(defaulted, schema, "", (v, s, path) => errors.push(...listMapErrors(v, s, path)));
  if (errors.some((e) => BLOCKING.has(e.type))) {
    errors.push({
      field: "<nil>",
      type: "Invalid",
      value: null,
      detail: "some validation rules were not checked because the object was invalid; correct " +
        "the existing errors to complete validation",
    });
  } else {
    walk(defaulted, schema, "", (v, s, path) => errors.push(...ruleErrors(v, s, path)));
  }
  // The API server reports each distinct message once.
  return [...new Set(errors.map(fieldErrorText))];
}

/**
 * What `kubectl apply` of `obj` gets from the API server: with strict field validation, fields the
 * schema does not declare refuse the request before any validation; else the validation's causes.
 */
export function applyErrors(obj: Json, schema: OpenApiSchema, specReplicasPath = ""): string[] {
  const unknown = unknownFields(obj, schema).sort();
  if (unknown.length > 0) {
    return [`strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(", ")}`];
  }
  return crdValidationErrors(obj, schema, specReplicasPath);
}
