/**
 * Whether the API server serves gang scheduling (spec.gang, children/gang.ts), found out by asking
 * it rather than a version table:
 *
 * 1. a dry-run create of the very Job the MiniCluster would get, under a generated name, with
 *    unknown fields refused (`fieldValidation=Strict`): Kubernetes before 1.36 does not know the
 *    pods' `schedulingGroup` and refuses it with its own message; 1.36 and later with the feature
 *    gate GenericWorkload off accept the Job and drop the field; with the gate on it is kept;
 * 2. then a list of at most one PodGroup: `scheduling.k8s.io/v1beta1` is a beta API, served only
 *    with `--runtime-config=scheduling.k8s.io/v1beta1=true`.
 *
 * The answer is kept for a while (gates change only when the control plane restarts), so
 * MiniClusters asking for a gang cost one dry run per period, not one per reconcile. Transient
 * failures are thrown (the reconcile is retried); any other refusal of the dry run is the Job's own
 * problem, which its real create reports, and says nothing about the gang.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import { ApiError, errorMessage, isNotFound, isRetryable } from "../../../runtime/client/errors.ts";
import { Jobs } from "../../../runtime/client/resources.ts";
import { jobPodGroup } from "../children/gang.ts";
import { PodGroups } from "./pod_group.ts";

export type GangSupport = { served: true } | { served: false; why: string };

/** How long an answer is kept. */
export const GANG_SUPPORT_TTL_MS = 5 * 60_000;

/** What the dropped field means, for the condition. */
const DROPPED_MESSAGE = "the API server accepted the Job but dropped its pods' " +
  "schedulingGroup (Kubernetes 1.36 or later with the feature gate GenericWorkload off: gang " +
  "scheduling needs it on the API server and the scheduler)";

const NO_POD_GROUPS_MESSAGE = "the API server keeps the pods' schedulingGroup but does " +
  "not serve scheduling.k8s.io/v1beta1 PodGroups (Kubernetes 1.37 with " +
  "--runtime-config=scheduling.k8s.io/v1beta1=true on the API server)";

export class GangSupportProbe {
  #answer?: { support: GangSupport; at: number };

  constructor(
    readonly client: ApiClient,
    readonly now: () => number = Date.now,
    readonly ttlMs = GANG_SUPPORT_TTL_MS,
  ) {}

  /** Whether a Job like `job` (whose pods name a PodGroup) keeps its gang. */
  async check(job: Job): Promise<GangSupport> {
    const kept = this.#answer;
    if (kept && this.now() - kept.at < this.ttlMs) return kept.support;
    const support = await this.#probe(job);
    if (support) this.#answer = { support, at: this.now() };
    return support ?? { served: true };
  }

  async #probe(job: Job): Promise<GangSupport | undefined> {
    const { namespace, name } = job.metadata ?? {};
    const probe: Job = {
      ...job,
      metadata: { namespace, generateName: `${(name ?? "gang").slice(0, 50)}-` },
    };
    try {
      const answer = await this.client.create<Job>(Jobs, probe, {
        dryRun: true,
        fieldValidation: "Strict",
      });
      if (jobPodGroup(answer) === undefined) return { served: false, why: DROPPED_MESSAGE };
    } catch (e) {
      if (!(e instanceof ApiError) || isRetryable(e)) throw e;
      // An unknown field is a 400 under Strict validation; a 422 is the Job's own problem.
      const message = errorMessage(e);
      if (e.code === 400 && /schedulingGroup/.test(message)) {
        const why = `the API server refused the pods' schedulingGroup: ${message}`;
        return { served: false, why };
      }
      return undefined;
    }
    return await this.#podGroupsServed(namespace);
  }

  async #podGroupsServed(namespace?: string): Promise<GangSupport | undefined> {
    try {
      await this.client.list(PodGroups, { namespace, limit: 1 });
      return { served: true };
    } catch (e) {
      if (isNotFound(e)) return { served: false, why: NO_POD_GROUPS_MESSAGE };
      if (!(e instanceof ApiError) || isRetryable(e)) throw e;
      return undefined;
    }
  }
}
