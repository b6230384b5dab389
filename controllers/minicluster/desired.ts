/**
 * Every child a MiniCluster should have, computed from its (defaulted) spec by the pure builders of
 * children/. No IO: the reconciler compares the result with the cache and writes what differs.
 *
 * On top of the builders this adds what every child needs the same way: the controller
 * ownerReference (garbage collection, event mapping), the operator's labels (the watch selectors),
 * and the hash annotation of diff.ts. The Job also gets a hash of its pod template alone, because the
 * template of a Job is immutable: a template change is reported, never applied (the Job's drift
 * policy, `jobDrift` in dependents.ts).
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Pod, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import type { DefaultedMiniCluster } from "../../api/mod.ts";
import { unknownContainerProblems } from "./children/container_annotations.ts";
import { buildEntrypointConfigMap } from "./children/entrypoint.ts";
import { buildCurveSecret, checkCurveCertificate, userCurveCert } from "./children/curve.ts";
import type { GivenCurveCert } from "./curve_source.ts";
import { buildPodGroup, type PodGroup } from "./children/gang.ts";
import { buildJob } from "./children/job.ts";
import { childLabels, headlessServiceName } from "./children/names.ts";
import { ownerReference } from "./children/owner.ts";
import { buildPortServices } from "./children/port_services.ts";
import { buildHeadlessService } from "./children/service.ts";
import { buildServicesPod } from "./children/services_pod.ts";
import type { Sizing } from "./children/sizing.ts";
import { hashOf, withDesiredHash } from "./diff.ts";

/**
 * Annotation on the Job: hash of the parts a Job cannot change once created (completion mode,
 * success policy, pod template).
 */
export const TEMPLATE_HASH_ANNOTATION = "flux-framework.org/template-hash";

export interface DesiredChildren {
  configMap: ConfigMap;
  /** The headless (or minimal) Service first, then one per non-Flux container with ports. */
  services: Service[];
  job: Job;
  servicesPod?: Pod;
  /** The gang's PodGroup (spec.gang, when the API server serves it): written by the reconciler. */
  podGroup?: PodGroup;
  /**
   * Only when the user gave a certificate (curve_source.ts); a generated one is created once
   * elsewhere.
   */
  curveSecret?: Secret;
}

/** A builder cannot make a valid child from this spec: a spec problem, not an operator failure. */
export class BuildError extends Error {
  override name = "BuildError";
}

/** What the children are built beside, from the live cluster (none: as `render` shows them). */
export interface DesiredOptions {
  /** A CURVE certificate given by the user (default: the spec's inline one). */
  given?: GivenCurveCert;
  /** The running Job's subdomain, which its brokers depend on. */
  runningSubdomain?: string;
  /** Leave spec.gang out (the API server does not serve it). */
  unganged?: boolean;
  /** The Job carries `suspend: true` (children/job.ts JobOptions). */
  suspend?: boolean;
  /** The Job's Kueue queue label (children/queue.ts jobQueueLabel). */
  queue?: string | null;
}

/**
 * The desired children of `mc` at `sizing`, with the user's CURVE certificate `given` (by default
 * the inline one), what the brokers depend on in `runningSubdomain` (the subdomain of the running
 * Job's pods, when there is a Job), the Job without its gang when `unganged` (the API server does
 * not serve it), the Job's suspension and queue label as the reconciler decided them. Throws
 * BuildError when the spec cannot be built (the builders' own errors are wrapped, so any builder
 * exception becomes a spec condition).
 */
export async function desiredChildren(
  mc: DefaultedMiniCluster,
  sizing: Sizing,
  opts: DesiredOptions = {},
): Promise<DesiredChildren> {
  const brokers = inSubdomain(mc, opts.runningSubdomain);
  const given = opts.given ?? inlineCurveCert(mc);
  let built: DesiredChildren;
  try {
    if (given) {
      const problems = await checkCurveCertificate(given.text);
      if (problems.length > 0) throw new BuildError(`${given.field}: ${problems.join("; ")}`);
    }
    const servicesPod = buildServicesPod(brokers);
    const podGroup = opts.unganged ? undefined : buildPodGroup(mc, sizing);
    built = {
      configMap: buildEntrypointConfigMap(brokers, sizing),
      services: [buildHeadlessService(brokers), ...buildPortServices(brokers)],
      job: buildJob(mc, sizing, {
        unganged: opts.unganged,
        suspend: opts.suspend,
        queue: opts.queue,
      }),
      ...(podGroup ? { podGroup } : {}),
      ...(servicesPod ? { servicesPod } : {}),
      ...(given ? { curveSecret: buildCurveSecret(mc, given.text) } : {}),
    };
  } catch (e) {
    if (e instanceof BuildError) throw e;
    throw new BuildError(e instanceof Error ? e.message : String(e));
  }
  const stray = unknownContainerProblems(mc.spec.pod.annotations, built.job, built.servicesPod);
  if (stray.length > 0) throw new BuildError(stray.join("; "));
  // Compared children carry the hash of what they were applied from (diff.ts); the Job gets it
  // after the hash of its template.
  const own = <T extends { metadata?: ObjectMeta }>(obj: T) => withDesiredHash(owned(mc, obj));
  const job = owned(mc, built.job);
  const templateHash = hashOf({
    completionMode: job.spec?.completionMode,
    successPolicy: job.spec?.successPolicy,
    podFailurePolicy: job.spec?.podFailurePolicy,
    template: job.spec?.template,
  });
  job.metadata = {
    ...job.metadata,
    annotations: { ...job.metadata?.annotations, [TEMPLATE_HASH_ANNOTATION]: templateHash },
  };
  return {
    configMap: own(built.configMap),
    services: built.services.map(own),
    job: withDesiredHash(job),
    ...(built.servicesPod ? { servicesPod: own(built.servicesPod) } : {}),
    ...(built.podGroup ? { podGroup: built.podGroup } : {}),
    ...(built.curveSecret ? { curveSecret: own(built.curveSecret) } : {}),
  };
}

/** `flux.curveCert` as a given certificate. */
function inlineCurveCert(mc: DefaultedMiniCluster): GivenCurveCert | undefined {
  const text = userCurveCert(mc);
  return text ? { text, field: "spec.flux.curveCert" } : undefined;
}

/**
 * `mc` as the brokers of its running Job see it: their pods stay in the Job's subdomain (a Job's
 * pod template cannot change), so the headless Service, the domain in broker.toml and the services
 * pod keep that name until the Job is created again; the Job itself is built from the spec, and
 * the difference is reported as a field the running Job cannot take.
 */
function inSubdomain(mc: DefaultedMiniCluster, subdomain?: string): DefaultedMiniCluster {
  if (!subdomain || subdomain === headlessServiceName(mc)) return mc;
  return { ...mc, spec: { ...mc.spec, network: { ...mc.spec.network, headlessName: subdomain } } };
}

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

interface Owner {
  metadata?: { name?: string; namespace?: string; uid?: string };
}
