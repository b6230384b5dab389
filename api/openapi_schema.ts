/**
 * A CRD's structural OpenAPI v3 schema (apiextensions.k8s.io/v1 JSONSchemaProps), as far as this
 * repository reads one: render's validation, the API reference generator and the tests that walk
 * crds/minicluster.yaml all take this one type.
 */

/** An `x-kubernetes-validations` entry: a CEL rule and how its failure is reported. */
export interface ValidationRule {
  rule: string;
  message?: string;
  fieldPath?: string;
  reason?:
    | "FieldValueInvalid"
    | "FieldValueForbidden"
    | "FieldValueRequired"
    | "FieldValueDuplicate";
}

export interface OpenApiSchema {
  type?: string;
  description?: string;
  properties?: Record<string, OpenApiSchema>;
  items?: OpenApiSchema;
  additionalProperties?: OpenApiSchema | boolean;
  anyOf?: OpenApiSchema[];
  required?: string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  pattern?: string;
  format?: string;
  default?: unknown;
  nullable?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-validations"?: ValidationRule[];
  [extension: string]: unknown;
}
