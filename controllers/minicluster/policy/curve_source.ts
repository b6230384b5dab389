/**
 * The user's CURVE certificate, when the spec gives one: inline (`flux.curveCert`, the Go
 * operator's field) or by reference to a Secret of the namespace (`flux.curveCertSecretRef`).
 *
 * The inline field puts the secret key in the MiniCluster, which everyone who may read
 * MiniClusters sees (the `view` role aggregates `minicluster-view`) while the Secrets holding the
 * same key are forbidden to them. The reference keeps it in a Secret: the operator reads that
 * Secret from the API (the label-selected Secret cache holds only the operator's own children)
 * each reconcile, so the cluster's CURVE Secret follows it.
 *
 * The install refuses the inline field at admission (deploy/inline-curve-cert-policy.yaml) except
 * in namespaces labelled with INLINE_CURVE_CERT_OPT_IN, so by default the operator uses what the
 * API server admitted (`--inline-curve-cert=allow`); `refuse` refuses it in every namespace, the
 * opted-in ones and clusters without the policy included, after it is stored (SpecInvalid).
 *
 * The text is checked as the inline one is (desired.ts) and is never logged nor put in a message.
 */
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import type { DefaultedMiniCluster } from "../../../api/mod.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import type { Problem } from "../../../runtime/controller/dependents.ts";
import { errorMessage, isRetryable } from "../../../runtime/client/errors.ts";
import { getOrUndefined } from "../../../runtime/client/get_or_undefined.ts";
import { Secrets } from "../../../runtime/client/resources.ts";
import { CURVE_CERT_KEY } from "../children/scripts/parts/paths.ts";

/**
 * The namespace label that lets `spec.flux.curveCert` through the install's admission policy
 * (deploy/inline-curve-cert-policy.yaml selects these namespaces out of its binding).
 */
export const INLINE_CURVE_CERT_OPT_IN = {
  label: "flux-framework.org/inline-curve-cert",
  value: "allow",
} as const;

/** What `--inline-curve-cert` lets through. */
export type InlineCurveCertPolicy = "allow" | "refuse";

/** How often a referenced Secret that is missing, or lacks its key, is looked for again. */
export const CURVE_SECRET_RECHECK_MS = 10_000;

/** The user's certificate and the field it came from (for messages). */
export interface GivenCurveCert {
  text: string;
  field: string;
}

export type CurveSource =
  /** No certificate given: the operator generates one. */
  | { generated: true }
  | GivenCurveCert
  /** The spec's certificate is refused by this operator's policy: SpecInvalid. */
  | { invalid: Problem }
  /** The referenced Secret cannot be used yet: Unappliable, looked at again after `recheckMs`. */
  | { problem: Problem; recheckMs: number };

const FIELD_INLINE = "spec.flux.curveCert";
const FIELD_REF = "spec.flux.curveCertSecretRef";

/**
 * Where `mc`'s certificate comes from, reading a referenced Secret from the API. Transient API
 * errors are thrown (the controller retries them with backoff).
 */
export async function curveSource(
  client: ApiClient,
  mc: DefaultedMiniCluster,
  policy: InlineCurveCertPolicy,
): Promise<CurveSource> {
  const inline = mc.spec.flux?.curveCert;
  if (inline) {
    if (policy === "allow") return { text: inline, field: FIELD_INLINE };
    return {
      invalid: {
        reason: "InlineCurveCertRefused",
        message: `${FIELD_INLINE} puts the secret key where everyone who may read MiniClusters ` +
          `reads it, and this operator refuses it (--inline-curve-cert=refuse): put the ` +
          `certificate in a Secret and name it in ${FIELD_REF}`,
      },
    };
  }
  const ref = mc.spec.flux?.curveCertSecretRef;
  if (!ref) return { generated: true };
  const key = ref.key || CURVE_CERT_KEY;
  const where = `${FIELD_REF}: Secret ${ref.name}`;
  const missing = (message: string) => ({
    problem: {
      reason: "CurveCertSecretMissing",
      message: `${where}${message} (looked for again every ${CURVE_SECRET_RECHECK_MS / 1000} s)`,
    },
    recheckMs: CURVE_SECRET_RECHECK_MS,
  });
  let secret: Secret | undefined;
  try {
    secret = await getOrUndefined<Secret>(client, Secrets, mc.metadata?.namespace, ref.name);
  } catch (e) {
    if (isRetryable(e)) throw e;
    return missing(`: ${errorMessage(e)}`);
  }
  if (!secret) return missing(" does not exist");
  const text = secretText(secret, key);
  if (text === undefined) return missing(` has no key ${key}`);
  return { text, field: `${where}, key ${key}` };
}

/** The value of `key` in `secret` as text (`data` is base64; `stringData` is write-only). */
function secretText(secret: Secret, key: string): string | undefined {
  const encoded = secret.data?.[key];
  if (encoded === undefined) return undefined;
  return new TextDecoder().decode(Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0)));
}
