/**
 * How a built child becomes a desired one: what every child needs the same way on top of its
 * builder (children/), so each row of child_kinds.ts finishes what it builds with one of these.
 *
 * - the controller ownerReference (garbage collection, event mapping), the MiniCluster's namespace
 *   and the operator's labels (the watch selectors), whatever the builder set (`owned`);
 * - the hash annotation of diff.ts, which sees a field set earlier and since removed (`ownedChild`);
 * - for the Job, also a hash of the parts a Job cannot change once created (its pod template above
 *   all): a template change is reported, never applied (the Job's drift policy, job_drift.ts).
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import { childLabels } from "../children/names.ts";
import { type Owner, ownerReference } from "../children/owner.ts";
import { type CanonicalTexts, hashOf, withDesiredHash } from "./diff.ts";

/**
 * Annotation on the Job: hash of the parts a Job cannot change once created (completion mode,
 * success policy, pod template).
 */
export const TEMPLATE_HASH_ANNOTATION = "flux-framework.org/template-hash";

/**
 * The one place a child gets its owner: the MiniCluster's namespace, the operator's labels (which
 * the watches select on; a builder's labels never override them) and the controller
 * ownerReference, whatever the builder set.
 */
export function owned<T extends { metadata?: ObjectMeta }>(mc: Owner, obj: T): T {
  return {
    ...obj,
    metadata: {
      ...obj.metadata,
      namespace: obj.metadata?.namespace ?? mc.metadata?.namespace,
      labels: { ...obj.metadata?.labels, ...childLabels(mc) },
      ownerReferences: [ownerReference(mc)],
    },
  };
}

/** A compared child: owned, with the hash of what it is applied from (diff.ts). */
export function ownedChild<T extends { metadata?: ObjectMeta }>(mc: Owner, obj: T): T {
  return withDesiredHash(owned(mc, obj));
}

/** The Job: owned, with the hash of its template, then the hash of the whole (diff.ts). */
export function ownedJob(mc: Owner, built: Job): Job {
  const job = owned(mc, built);
  // The template is written out once for both hashes.
  const texts: CanonicalTexts = new WeakMap();
  const templateHash = hashOf({
    completionMode: job.spec?.completionMode,
    successPolicy: job.spec?.successPolicy,
    podFailurePolicy: job.spec?.podFailurePolicy,
    template: job.spec?.template,
  }, texts);
  job.metadata = {
    ...job.metadata,
    annotations: { ...job.metadata?.annotations, [TEMPLATE_HASH_ANNOTATION]: templateHash },
  };
  return withDesiredHash(job, texts);
}
