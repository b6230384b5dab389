/**
 * Is the generated CURVE certificate still the one the brokers were started with?
 *
 * The generated certificate's Secret is created once and never updated (a new key would split the
 * cluster: running brokers keep the one they read at start). Two things can still change it behind
 * the operator's back, and both are reported (the Unappliable condition and its Event), never
 * silently "fixed":
 *
 * - deleted: the operator makes a new Secret with a new key, which pods started later read while
 *   the running ones keep the old key. Observed as a Secret created after the Job.
 * - edited: the Secret carries the digest of the certificate it was created with
 *   (CURVE_DIGEST_ANNOTATION); the cache keeps a digest of every value (cache_view.ts), so the two
 *   are compared without the key ever entering the heap. This catches careless edits; someone who
 *   may write the Secret can also rewrite the annotation (Secrets are the namespace's to protect).
 *
 * Pure: reads what the reconcile observed.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import type { Problem } from "../../../runtime/controller/dependents.ts";
import { digestOf } from "../kinds/cache_view.ts";
import { CURVE_CERT_KEY } from "../children/scripts/parts/paths.ts";

/** On the generated Secret: the digest (cache_view.ts) of its `data` value at creation. */
export const CURVE_DIGEST_ANNOTATION = "flux-framework.org/curve-cert-digest";

/** The generated Secret with the digest of its certificate recorded. */
export function withCurveDigest(secret: Secret): Secret {
  const value = secret.data?.[CURVE_CERT_KEY] ?? "";
  return {
    ...secret,
    metadata: {
      ...secret.metadata,
      annotations: { ...secret.metadata?.annotations, [CURVE_DIGEST_ANNOTATION]: digestOf(value) },
    },
  };
}

/**
 * Problems of the generated certificate's Secret as the cache shows it (values as digests), given
 * the MiniCluster's Job. None while either is missing.
 */
export function curveProblems(secret: Secret | undefined, job: Job | undefined): Problem[] {
  if (!secret) return [];
  const name = secret.metadata?.name;
  const problems: Problem[] = [];
  const recorded = secret.metadata?.annotations?.[CURVE_DIGEST_ANNOTATION];
  const value = secret.data?.[CURVE_CERT_KEY];
  const digest = value === undefined
    ? undefined
    : value.startsWith("digest:")
    ? value
    : digestOf(value);
  if (recorded && digest !== recorded) {
    problems.push({
      reason: "CurveCertificateChanged",
      message: `the CURVE certificate in Secret ${name} is not the one the operator generated ` +
        `(${CURVE_DIGEST_ANNOTATION}); brokers started with the original and pods started now ` +
        "read this one: restore it, or delete and re-create the MiniCluster",
    });
  }
  const made = Date.parse(secret.metadata?.creationTimestamp ?? "");
  const started = Date.parse(job?.metadata?.creationTimestamp ?? "");
  if (made > started) {
    problems.push({
      reason: "CurveCertificateRegenerated",
      message: `the CURVE Secret ${name} was deleted and generated again with a new key at ` +
        `${secret.metadata?.creationTimestamp}, after the Job started; brokers started before ` +
        "hold the old key and cannot talk to newer ones: delete and re-create the MiniCluster",
    });
  }
  return problems;
}
