/**
 * The MiniCluster reconciler: `reconcile(mc, ctx) → Action`, level-triggered and idempotent.
 *
 * Every run recomputes the whole desired state from the spec (plus the workspace), compares each
 * child with the cache, and writes only what differs — by server-side apply with one field manager,
 * forced, so the operator owns exactly the fields it sets. Then it derives the status from what it
 * observed and writes it only when it changed, emitting an Event for every condition that changed
 * status or reason. An unchanged MiniCluster therefore costs zero writes.
 *
 * Problems that retrying cannot fix (an invalid spec, a Job field a running Job cannot take, an API
 * rejection) become conditions and Events and the reconcile ends normally: it runs again when
 * something changes. Only transient failures (throttling, server errors, conflicts) are thrown, so
 * the controller retries them with backoff. Nothing here loops on an exception.
 */
import type { Job } from "kubernetes-types/batch/v1.d.ts";
import type { ConfigMap, Pod, Secret, Service } from "kubernetes-types/core/v1.d.ts";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import {
  type DefaultedMiniCluster,
  type MiniCluster,
  validateSpec,
  withDefaults,
} from "../../api/mod.ts";
import type { KubeClient } from "../../runtime/client.ts";
import {
  Action,
  type ReconcileContext,
  type Reconciler,
  TerminalError,
} from "../../runtime/controller.ts";
import { ApiError, isConflict, isInvalid, isNotFound, isRetryable } from "../../runtime/errors.ts";
import { Jobs, MiniClusters, Pods, type ResourceType, Services } from "../../runtime/resources.ts";
import { controllerOf, type Store } from "../../runtime/store.ts";
import { type RuntimeLog, silentLog } from "../../runtime/watcher.ts";
import { buildCurveSecret, curveMetadataFor, generateCurveCertificate } from "./children/curve.ts";
import {
  curveSecretName,
  FIELD_MANAGER,
  JOB_NAME_LABEL,
  jobName,
  MINICLUSTER_LABEL,
  scaleSelector,
  workspaceName,
} from "./children/names.ts";
import {
  BuildError,
  type Child,
  childrenInOrder,
  childResource,
  type DesiredChildren,
  desiredChildren,
  TEMPLATE_HASH_ANNOTATION,
} from "./desired.ts";
import { dataView } from "./cache_view.ts";
import { differingPaths, upToDate } from "./diff.ts";
import { conditionEvents, errorMessage, type EventRecorder } from "./events.ts";
import { finalizer } from "./finalizer.ts";
import { RecentWrites } from "./recent_writes.ts";
import {
  brokerFinished,
  computeStatus,
  type MiniClusterStatus,
  type Problem,
  progressOnly,
  sameStatus,
} from "./status.ts";
import {
  type CurveBuilders,
  ensureCurveSecret,
  ensureWorkspace,
  getOrUndefined,
  isWorkspace,
  parseWorkspace,
  type Workspace,
  WorkspaceError,
} from "./workspace.ts";

/** The caches the reconciler reads (the operator's label-selected watches). */
export interface MiniClusterStores {
  miniClusters: Store<MiniCluster>;
  configMaps: Store<ConfigMap>;
  secrets: Store<Secret>;
  services: Store<Service>;
  jobs: Store<Job>;
  pods: Store<Pod>;
}

export interface MiniClusterReconcilerOptions {
  client: KubeClient;
  stores: MiniClusterStores;
  recorder: EventRecorder;
  log?: RuntimeLog;
  /** How long deletion waits for the MiniCluster's pods to go before giving up. Default 2 min. */
  cleanupTimeoutMs?: number;
  /** How often deletion checks again while pods remain. Default 2 s. */
  cleanupPollMs?: number;
  /** How the CURVE certificate is made (tests may count calls). */
  curve?: CurveBuilders;
  now?: () => Date;
}

const DEFAULT_CLEANUP_TIMEOUT_MS = 120_000;
const DEFAULT_CLEANUP_POLL_MS = 2_000;
/** Retry soon after deleting a child that must be re-created (immutable Service/Pod fields). */
const RECREATE_REQUEUE_MS = 1_000;

/** Retry soon after finding the cached MiniCluster behind the live one (the watch catches up). */
const STALE_VIEW_REQUEUE_MS = 1_000;

/** The cached MiniCluster is older than the live one: do not write children from it. */
class StaleViewError extends Error {
  override name = "StaleViewError";
}

/**
 * Progress-only status changes (another pod ready, see status.ts `progressOnly`) are written at
 * most this often per MiniCluster: while a Job's pods come up one by one, each would otherwise cost
 * a status write. Transitions (Ready turning True, any condition's status or reason) are written at
 * once.
 */
const STATUS_PROGRESS_INTERVAL_MS = 3_000;

/** How long after creating a Job its MiniCluster's status is first written (see #apply). */
const FIRST_STATUS_DELAY_MS = 1_000;

/** How often a MiniCluster whose child name is taken by someone else checks again. */
const NAME_TAKEN_RECHECK_MS = 10_000;

/** Job spec fields a running Job accepts; everything else in the template is immutable. */
const MUTABLE_JOB_FIELDS = ["parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"];

/** A generated certificate names the lead broker's host, as the Go operator's does. */
const defaultCurve: CurveBuilders = {
  generate: async (mc) => (await generateCurveCertificate(curveMetadataFor(mc))).text,
  build: (mc, text) => buildCurveSecret(mc, text),
};

type Obj = { metadata?: ObjectMeta };

/**
 * A resourceVersion no object in a namespace can have (etcd's first revision predates every
 * namespace): an apply carrying it creates the object when the name is free and fails with a
 * Conflict when anything holds the name, so a child is never taken over unseen.
 */
const CREATE_ONLY_RESOURCE_VERSION = "1";

export class MiniClusterReconciler implements Reconciler<MiniCluster> {
  readonly #client: KubeClient;
  readonly #stores: MiniClusterStores;
  readonly #recorder: EventRecorder;
  readonly #log: RuntimeLog;
  readonly #cleanupTimeoutMs: number;
  readonly #cleanupPollMs: number;
  readonly #curve: CurveBuilders;
  readonly #now: () => Date;
  readonly #recent = new RecentWrites();
  /** By "namespace/name": the workspace that MiniCluster (uid) was found or created with. */
  readonly #workspaces = new Map<string, { uid: string; workspace: Workspace }>();
  /** By "namespace/name": when this process last wrote that MiniCluster's status (ms). */
  readonly #statusWrittenAt = new Map<string, number>();

  constructor(opts: MiniClusterReconcilerOptions) {
    this.#client = opts.client;
    this.#stores = opts.stores;
    this.#recorder = opts.recorder;
    this.#log = opts.log ?? silentLog;
    this.#cleanupTimeoutMs = opts.cleanupTimeoutMs ?? DEFAULT_CLEANUP_TIMEOUT_MS;
    this.#cleanupPollMs = opts.cleanupPollMs ?? DEFAULT_CLEANUP_POLL_MS;
    this.#curve = opts.curve ?? defaultCurve;
    this.#now = opts.now ?? (() => new Date());
  }

  /** The MiniCluster is gone from the cache: forget what this process remembered of it. */
  deleted(key: string): Promise<void> {
    this.#workspaces.delete(key);
    this.#statusWrittenAt.delete(key);
    return Promise.resolve();
  }

  async reconcile(cached: MiniCluster, ctx: ReconcileContext): Promise<Action> {
    const mc = this.#view(
      "MiniCluster",
      cached.metadata?.namespace,
      cached.metadata?.name!,
      cached,
    )!;
    const log = ctx.log ?? this.#log;
    return await finalizer(
      this.#client,
      mc,
      {
        // A MiniCluster our finalizer patch just returned is the live one: no freshness read.
        apply: (m) => this.#apply(m, log, m !== mc),
        cleanup: (m) => this.#cleanup(m, log),
      },
      (patched) => this.#recent.record("MiniCluster", mc, patched),
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Apply: the live MiniCluster.

  /** `known`: the workspace as just read from the API server, when the caller has it. */
  async #apply(
    mc: MiniCluster,
    log: RuntimeLog,
    live: boolean,
    known?: Workspace,
  ): Promise<Action> {
    const requestedSize = mc.spec?.size ?? 1;
    let defaulted: DefaultedMiniCluster;
    try {
      const problems = validateSpec(mc);
      if (problems.length > 0) {
        return await this.#finish(mc, {
          requestedSize,
          invalid: { reason: "ValidationFailed", message: problems.join("; ") },
        });
      }
      defaulted = withDefaults(mc);
    } catch (e) {
      return await this.#finish(mc, {
        requestedSize,
        invalid: { reason: "ValidationFailed", message: errorMessage(e) },
      });
    }

    const fresh = live ? () => Promise.resolve() : this.#freshnessCheck(mc);

    // The workspace fixes the maximum for the cluster's whole life (the hostlist is written for it).
    const initial = { maxSize: defaulted.spec.maxSize, size: defaulted.spec.size };
    const workspaceFailed = (e: unknown): Promise<Action> | Action => {
      if (e instanceof StaleViewError) return this.#staleView(mc, log, e);
      if (e instanceof WorkspaceError) {
        return this.#finish(mc, {
          requestedSize,
          unappliable: { reason: "WorkspaceInvalid", message: e.message },
        });
      }
      return this.#finish(mc, { requestedSize, unappliable: this.#problem(e, "workspace") });
    };
    let maximumSize: number;
    // A workspace being created alongside the other children (see below), and what it resolves to.
    let workspaceCreate: Promise<{ workspace?: Workspace; error?: unknown }> | undefined;
    try {
      let workspace = known ?? this.#knownWorkspace(mc);
      const ns = mc.metadata?.namespace;
      const untouched = !this.#stores.jobs.get(ns, jobName(mc)) &&
        !this.#stores.configMaps.get(ns, workspaceName(mc));
      if (!workspace && live && untouched) {
        // Our finalizer was only just added and no child is in sight: nobody reconciled this
        // MiniCluster before, so its workspace almost surely does not exist yet and will hold
        // `initial`. Create it with the other children, in the same round trip, instead of before
        // them; should it exist after all with another maximum, everything is built again from it
        // before the Job is written (below).
        workspaceCreate = ensureWorkspace(this.#client, mc, initial, { createFirst: true }).then(
          ({ workspace }) => ({ workspace }),
          (error) => ({ error }),
        );
        workspace = initial;
      } else if (!workspace) {
        ({ workspace } = await ensureWorkspace(this.#client, mc, initial, { beforeCreate: fresh }));
        this.#workspaces.set(keyOf(mc), { uid: mc.metadata?.uid ?? "", workspace });
      }
      maximumSize = workspace.maxSize;
    } catch (e) {
      return await workspaceFailed(e);
    }
    const effectiveSize = Math.min(Math.max(requestedSize, 1), maximumSize);
    const sizes = { requestedSize, effectiveSize, maximumSize };

    let desired: DesiredChildren;
    try {
      desired = await desiredChildren(defaulted, { size: effectiveSize, maxSize: maximumSize });
    } catch (e) {
      if (!(e instanceof BuildError)) throw e;
      return await this.#finish(mc, {
        ...sizes,
        invalid: { reason: "BuildFailed", message: e.message },
      });
    }

    const problems: Problem[] = [];
    let requeue: number | undefined;
    let jobCreated = false;

    const curveSecret = async (): Promise<{ problem?: Problem }> => {
      if (desired.curveSecret) return {};
      try {
        const created = await ensureCurveSecret(
          this.#client,
          this.#stores.secrets,
          defaulted,
          this.#curve,
          fresh,
        );
        if (created) this.#recent.record("Secret", undefined, created);
        return {};
      } catch (e) {
        return {
          problem: e instanceof WorkspaceError
            ? { reason: "NameTaken", message: e.message }
            : this.#problem(e, `Secret ${curveSecretName(mc)}`),
        };
      }
    };

    try {
      // The children are independent of each other: write them concurrently (a new MiniCluster
      // costs one round trip for all of them, not one each), then the Job, whose pods mount them.
      const [created, ...outcomes] = await Promise.all([
        workspaceCreate,
        curveSecret(),
        ...childrenInOrder(desired).map((child) => this.#applyChild(mc, child, fresh)),
      ]);
      if (created) {
        if (!created.workspace) return await workspaceFailed(created.error);
        this.#workspaces.set(keyOf(mc), {
          uid: mc.metadata?.uid ?? "",
          workspace: created.workspace,
        });
        if (created.workspace.maxSize !== initial.maxSize) {
          // It existed, made for another maximum: build everything again from it.
          return await this.#apply(mc, log, live, created.workspace);
        }
      }
      for (const outcome of outcomes as { problem?: Problem; requeueAfter?: number }[]) {
        if (outcome.problem) problems.push(outcome.problem);
        if (outcome.requeueAfter !== undefined) requeue = outcome.requeueAfter;
      }

      const job = await this.#applyJob(mc, desired.job, fresh);
      if (job.problem) problems.push(job.problem);
      jobCreated = job.created === true;

      problems.push(...await this.#pruneStale(mc, desired, fresh));
    } catch (e) {
      if (!(e instanceof StaleViewError)) throw e;
      return this.#staleView(mc, log, e);
    }

    // cleanup: true → the MiniCluster goes away once the lead broker has finished.
    if (defaulted.spec.cleanup && brokerFinished(this.#podsOf(mc), jobName(mc))) {
      log.info("lead broker finished; deleting the MiniCluster (cleanup: true)", {
        minicluster: `${mc.metadata?.namespace}/${mc.metadata?.name}`,
      });
      await this.#recorder.emit(mc, {
        type: "Normal",
        reason: "CleanupAfterCompletion",
        message: "the lead broker finished and spec.cleanup is true: deleting the MiniCluster",
      });
      await this.#delete(MiniClusters, "MiniCluster", mc, { propagationPolicy: "Background" });
      return Action.awaitChange();
    }

    if (jobCreated && problems.length === 0 && requeue === undefined) {
      // The Job was created a moment ago: it has no pods, so the status could only say "not
      // ready". Write it with the next reconcile instead (the children's and pods' events bring
      // one within a second): under load the writes that start clusters go first, and a cluster
      // that is Ready by then costs one status write instead of two.
      return Action.requeueAfter(FIRST_STATUS_DELAY_MS);
    }
    const unappliable = problems.length === 0 ? undefined : {
      reason: problems[0].reason,
      message: problems.map((p) => p.message).join("; "),
    };
    const action = await this.#finish(mc, { ...sizes, unappliable });
    // A name held by someone else may be freed without any event we would see (their object need
    // not carry our label or owner): look again now and then.
    if (requeue === undefined && problems.some((p) => p.reason === "NameTaken")) {
      requeue = NAME_TAKEN_RECHECK_MS;
    }
    if (requeue === undefined) return action;
    return Action.requeueAfter(Math.min(requeue, action.requeueAfter ?? requeue));
  }

  #staleView(mc: MiniCluster, log: RuntimeLog, e: StaleViewError): Action {
    log.debug("stale view of the MiniCluster; waiting for the cache", {
      minicluster: `${mc.metadata?.namespace}/${mc.metadata?.name}`,
      reason: e.message,
    });
    return Action.requeueAfter(STALE_VIEW_REQUEUE_MS);
  }

  /**
   * Writes one non-Job child if it differs from the cache. `seen` is the child as just read from
   * the API server, after a create-only apply found its name held (see #createOnly).
   */
  async #applyChild(
    mc: MiniCluster,
    child: Child,
    fresh: () => Promise<void>,
    seen?: Obj,
  ): Promise<{ problem?: Problem; requeueAfter?: number }> {
    const rt = childResource(child.kind);
    const obj = child.object;
    const ns = obj.metadata?.namespace;
    const name = obj.metadata!.name!;
    const observed = seen ??
      this.#view(child.kind, ns, name, this.#storeOf(child.kind).get(ns, name));
    const notOwned = this.#notOwned(mc, child.kind, observed);
    if (notOwned) return { problem: notOwned };
    if (upToDate(comparable(child.kind, observed), comparable(child.kind, obj))) return {};
    await fresh();
    if (child.kind === "Pod" && observed) {
      // A Pod's spec is immutable: replace the services pod.
      await this.#delete(Pods, "Pod", observed);
      return { requeueAfter: RECREATE_REQUEUE_MS };
    }
    if (child.kind === "Service" && observed && isHeadless(observed) !== isHeadless(obj)) {
      // Headless to ClusterIP (flux.minimalService turned on): an apply that leaves clusterIP out
      // succeeds and the API server keeps "None", so the Service silently stays headless.
      // Re-create it (the other way round the apply is refused, handled below).
      await this.#delete(Services, "Service", observed);
      return { requeueAfter: RECREATE_REQUEUE_MS };
    }
    try {
      if (!observed) {
        const created = await this.#createOnly(mc, rt, child.kind, obj);
        if (!created.applied) {
          return created.held
            ? await this.#applyChild(mc, child, fresh, created.held)
            : { problem: created.problem };
        }
        this.#recent.record(child.kind, undefined, created.applied);
        return {};
      }
      const applied = await this.#client.apply<Obj>(rt, obj, {
        fieldManager: FIELD_MANAGER,
        force: true,
      });
      this.#recent.record(child.kind, observed, applied);
      return {};
    } catch (e) {
      if (child.kind === "Service" && observed && isInvalid(e)) {
        // Switching between a headless and a ClusterIP Service changes clusterIP, which is
        // immutable: delete it and create it again on the next pass.
        await this.#delete(Services, "Service", observed);
        return { requeueAfter: RECREATE_REQUEUE_MS };
      }
      return { problem: this.#problem(e, `${child.kind} ${name}`) };
    }
  }

  /**
   * The Job: created whole; later only what a running Job accepts. A changed pod template (or
   * completion mode) is reported with the fields that differ and left alone — recreating the Job
   * would kill the running cluster — while size and limits still follow the spec.
   */
  async #applyJob(
    mc: MiniCluster,
    desired: Job,
    fresh: () => Promise<void>,
    seen?: Job,
  ): Promise<{ job?: Job; problem?: Problem; created?: boolean }> {
    const ns = desired.metadata?.namespace;
    const name = desired.metadata!.name!;
    const observed = seen ?? this.#view("Job", ns, name, this.#stores.jobs.get(ns, name));
    const notOwned = this.#notOwned(mc, "Job", observed);
    if (notOwned) return { problem: notOwned };
    if (upToDate(observed, desired)) return { job: observed };
    await fresh();

    const templateChanged = observed !== undefined &&
      observed.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION] !==
        desired.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION];
    try {
      if (!observed) {
        const created = await this.#createOnly(mc, Jobs, "Job", desired);
        if (!created.applied) {
          return created.held
            ? await this.#applyJob(mc, desired, fresh, created.held as Job)
            : { problem: created.problem };
        }
        const applied = created.applied as Job;
        this.#recent.record("Job", undefined, applied);
        return { job: applied, created: true };
      }
      if (!templateChanged) {
        const applied = await this.#client.apply<Job>(Jobs, desired, {
          fieldManager: FIELD_MANAGER,
          force: true,
        });
        this.#recent.record("Job", observed, applied);
        await this.#scaledEvent(mc, observed, applied);
        return { job: applied };
      }
      const paths = differingPaths(observed, desired).filter((p) =>
        !p.startsWith(`metadata.annotations`)
      );
      const immutable = paths.filter((p) => /^spec\.(template|completionMode)/.test(p));
      const problem: Problem = {
        reason: "JobFieldsImmutable",
        message: `the running Job ${name} cannot take changes to ${
          immutable.length > 0 ? immutable.join(", ") : "spec.template (fields removed)"
        }; they apply when the MiniCluster is created again`,
      };
      const patch = mutableJobPatch(observed!, desired);
      if (!patch) return { job: observed, problem };
      const patched = await this.#client.patch<Job>(Jobs, ns, name, patch, "merge", {
        fieldManager: FIELD_MANAGER,
      });
      this.#recent.record("Job", observed, patched);
      await this.#scaledEvent(mc, observed, patched);
      return { job: patched, problem };
    } catch (e) {
      return { job: observed, problem: this.#problem(e, `Job ${name}`) };
    }
  }

  async #scaledEvent(mc: MiniCluster, before: Job | undefined, after: Job): Promise<void> {
    const from = before?.spec?.parallelism;
    const to = after.spec?.parallelism;
    if (from === undefined || to === undefined || from === to) return;
    await this.#recorder.emit(mc, {
      type: "Normal",
      reason: "Scaled",
      message: `scaled the Job from ${from} to ${to} pods`,
    });
  }

  /** Deletes children this MiniCluster owns that the spec no longer asks for. */
  async #pruneStale(
    mc: MiniCluster,
    desired: DesiredChildren,
    fresh: () => Promise<void>,
  ): Promise<Problem[]> {
    const uid = mc.metadata?.uid;
    if (!uid) return [];
    const wanted = new Set<string>(
      childrenInOrder(desired).map((c) => `${c.kind}/${c.object.metadata?.name}`),
    );
    wanted.add(`ConfigMap/${workspaceName(mc)}`);
    wanted.add(`Secret/${curveSecretName(mc)}`);
    const candidates: Array<[Child["kind"], Obj]> = [
      ...this.#stores.configMaps.byIndex("owner", uid).filter((c) => !isWorkspace(c))
        .map((o) => ["ConfigMap", o] as [Child["kind"], Obj]),
      ...this.#stores.services.byIndex("owner", uid).map((o) =>
        ["Service", o] as [Child["kind"], Obj]
      ),
      ...this.#stores.pods.byIndex("owner", uid).map((o) => ["Pod", o] as [Child["kind"], Obj]),
      ...this.#stores.secrets.byIndex("owner", uid).map((o) =>
        ["Secret", o] as [Child["kind"], Obj]
      ),
    ];
    const problems: Problem[] = [];
    for (const [kind, obj] of candidates) {
      if (wanted.has(`${kind}/${obj.metadata?.name}`) || obj.metadata?.deletionTimestamp) continue;
      await fresh();
      try {
        await this.#delete(childResource(kind), kind, obj);
      } catch (e) {
        problems.push(this.#problem(e, `${kind} ${obj.metadata?.name}`));
      }
    }
    return problems;
  }

  // ---------------------------------------------------------------------------------------------
  // Status.

  async #finish(
    mc: MiniCluster,
    input: {
      requestedSize: number;
      effectiveSize?: number;
      maximumSize?: number;
      invalid?: Problem;
      unappliable?: Problem;
    },
  ): Promise<Action> {
    const ns = mc.metadata?.namespace;
    const name = mc.metadata!.name!;
    const job = this.#view("Job", ns, jobName(mc), this.#stores.jobs.get(ns, jobName(mc)));
    const ownJob = job && controllerOf(job)?.uid === mc.metadata?.uid ? job : undefined;
    const maximumSize = input.maximumSize ?? (mc.spec?.maxSize || mc.spec?.size || 1);
    const status = computeStatus({
      generation: mc.metadata?.generation,
      selector: scaleSelector(mc),
      requestedSize: input.requestedSize,
      effectiveSize: input.effectiveSize ?? input.requestedSize,
      maximumSize,
      invalid: input.invalid,
      unappliable: input.unappliable,
      job: ownJob,
      pods: ownJob ? this.#podsOf(mc) : [],
      previous: mc.status?.conditions,
      now: rfc3339(this.#now()),
    });
    if (!sameStatus(status, mc.status)) {
      const now = this.#now().getTime();
      const last = this.#statusWrittenAt.get(keyOf(mc));
      const wait = last === undefined ? 0 : last + STATUS_PROGRESS_INTERVAL_MS - now;
      if (wait > 0 && progressOnly(mc.status, status)) return Action.requeueAfter(wait);
      // The Events of the changed conditions go out with the status write, not after it: one
      // round trip instead of two (an Event is best-effort, a failed status write is retried).
      await Promise.all([
        this.#writeStatus(mc, status, name),
        this.#recorder.emitAll(mc, conditionEvents(mc.status?.conditions, status.conditions)),
      ]);
      this.#statusWrittenAt.set(keyOf(mc), now);
    }
    return Action.awaitChange();
  }

  async #writeStatus(mc: MiniCluster, status: MiniClusterStatus, name: string): Promise<void> {
    try {
      const written = await this.#client.apply<MiniCluster>(
        MiniClusters,
        {
          apiVersion: "flux-framework.org/v1alpha2",
          kind: "MiniCluster",
          metadata: { name, namespace: mc.metadata?.namespace },
          status,
        } as unknown as MiniCluster,
        { fieldManager: FIELD_MANAGER, force: true, subresource: "status" },
      );
      this.#recent.record("MiniCluster", mc, written);
    } catch (e) {
      if (isNotFound(e)) return; // deleted meanwhile
      // A status the API refuses (or may not be written by us) will be refused again: record it
      // once instead of retrying in a loop; the next change of the MiniCluster tries again.
      if (e instanceof ApiError && !isRetryable(e) && !isConflict(e)) {
        throw new TerminalError(`writing the status of MiniCluster ${name}: ${errorMessage(e)}`);
      }
      throw e;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Cleanup: the MiniCluster is being deleted and our finalizer is on it.

  async #cleanup(
    mc: MiniCluster,
    log: RuntimeLog,
  ): Promise<{ done: true } | { done: false; action: Action }> {
    const ns = mc.metadata?.namespace;
    const uid = mc.metadata?.uid;
    const job = this.#stores.jobs.get(ns, jobName(mc));
    if (job && controllerOf(job)?.uid === uid && !job.metadata?.deletionTimestamp) {
      // Foreground: the Job stays (with deletionTimestamp) until the garbage collector has deleted
      // its pods, so nothing new is started while we wait.
      await this.#delete(Jobs, "Job", job, { propagationPolicy: "Foreground" });
    }
    for (const pod of this.#stores.pods.byIndex("owner", uid ?? "")) {
      if (!pod.metadata?.deletionTimestamp) await this.#delete(Pods, "Pod", pod);
    }
    const remaining = this.#podsOf(mc).length +
      this.#stores.pods.byIndex("owner", uid ?? "").length;
    const since = Date.parse(mc.metadata?.deletionTimestamp ?? "") || this.#now().getTime();
    const waited = this.#now().getTime() - since;
    if (remaining > 0 && waited < this.#cleanupTimeoutMs) {
      return {
        done: false,
        action: Action.requeueAfter(
          Math.min(this.#cleanupPollMs, Math.max(1, this.#cleanupTimeoutMs - waited)),
        ),
      };
    }
    if (remaining > 0) {
      log.warn("pods of a deleted MiniCluster remain; removing the finalizer anyway", {
        minicluster: `${ns}/${mc.metadata?.name}`,
        pods: remaining,
      });
      await this.#recorder.emit(mc, {
        type: "Warning",
        reason: "CleanupTimedOut",
        message: `${remaining} pod(s) still exist after ${
          Math.round(waited / 1000)
        }s; removing the finalizer so deletion is not blocked`,
      });
    }
    // Ownership removes these after the MiniCluster goes, but only where a garbage collector runs,
    // and only after the MiniCluster is gone: delete them now so nothing is left behind.
    for (
      const [kind, store] of [
        ["ConfigMap", this.#stores.configMaps],
        ["Secret", this.#stores.secrets],
        ["Service", this.#stores.services],
      ] as const
    ) {
      for (const obj of (store as Store<Obj>).byIndex("owner", uid ?? "")) {
        if (!obj.metadata?.deletionTimestamp) await this.#delete(childResource(kind), kind, obj);
      }
    }
    this.#workspaces.delete(keyOf(mc));
    this.#statusWrittenAt.delete(keyOf(mc));
    await this.#recorder.emit(mc, {
      type: "Normal",
      reason: "CleanedUp",
      message: "deleted the Job, its pods and every child of the MiniCluster",
    });
    return { done: true };
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers.

  /**
   * Before the first write of a reconcile, one read of the live MiniCluster: children are written
   * from the spec, and a spec from a stale view (a cache fed by a lagging apiserver, an old list)
   * would roll them back to an older generation. Unchanged MiniClusters never write, so this costs
   * nothing while idle. Memoized per reconcile; throws StaleViewError when the view is behind.
   */
  #freshnessCheck(mc: MiniCluster): () => Promise<void> {
    let check: Promise<void> | undefined;
    return () =>
      check ??= (async () => {
        let live: MiniCluster;
        try {
          live = await this.#client.get<MiniCluster>(
            MiniClusters,
            mc.metadata?.namespace,
            mc.metadata!.name!,
          );
        } catch (e) {
          if (isNotFound(e)) throw new StaleViewError("the MiniCluster is gone");
          throw e;
        }
        if (live.metadata?.uid !== mc.metadata?.uid) {
          throw new StaleViewError("the MiniCluster was re-created");
        }
        if (live.metadata?.generation !== mc.metadata?.generation) {
          throw new StaleViewError(
            `generation ${mc.metadata?.generation} seen, ${live.metadata?.generation} live`,
          );
        }
      })();
  }

  /**
   * The workspace this process already read from the API (or created) for this MiniCluster, while
   * the cache shows that same workspace ConfigMap, owned by it: the workspace is written once and
   * never changed by the operator, so the API read would only repeat what we know. Anything else
   * (first reconcile in this process, the cache not caught up yet, a hand-edited or deleted
   * workspace) goes to the API server as before.
   */
  #knownWorkspace(mc: MiniCluster): Workspace | undefined {
    const uid = mc.metadata?.uid;
    const entry = this.#workspaces.get(keyOf(mc));
    if (!uid || entry?.uid !== uid) return undefined;
    const known = entry.workspace;
    const cached = this.#stores.configMaps.get(mc.metadata?.namespace, workspaceName(mc));
    if (!cached || controllerOf(cached)?.uid !== uid) return undefined;
    const seen = parseWorkspace(cached);
    return seen?.maxSize === known.maxSize && seen.size === known.size ? known : undefined;
  }

  /** Pods of this MiniCluster's Job (by the Job controller's own label and our MiniCluster label). */
  #podsOf(mc: MiniCluster): Pod[] {
    return this.#stores.pods.list({
      namespace: mc.metadata?.namespace,
      labels: { [JOB_NAME_LABEL]: jobName(mc), [MINICLUSTER_LABEL]: mc.metadata!.name! },
    });
  }

  #view<T extends Obj>(kind: string, ns: string | undefined, name: string, cached?: T) {
    return this.#recent.view<T>(kind, ns, name, cached);
  }

  #storeOf(kind: Child["kind"]): Store<Obj> {
    switch (kind) {
      case "ConfigMap":
        return this.#stores.configMaps;
      case "Secret":
        return this.#stores.secrets;
      case "Service":
        return this.#stores.services;
      case "Pod":
        return this.#stores.pods;
    }
  }

  /** A problem when an object of that name exists and belongs to someone else (never taken over). */
  #notOwned(mc: MiniCluster, kind: string, observed: Obj | undefined): Problem | undefined {
    if (!observed) return undefined;
    const owner = controllerOf(observed);
    if (owner?.uid === mc.metadata?.uid) return undefined;
    return {
      reason: "NameTaken",
      message: `${kind} ${observed.metadata?.name} exists and is not owned by this MiniCluster`,
    };
  }

  /**
   * Creates a child the cache does not show, in one request: an apply (same field manager, same
   * managed fields as every later apply) that carries a resourceVersion no object has, so it fails
   * with a Conflict instead of taking over an object that already holds the name. The cache holds
   * only objects with our label, so someone else's object of that name is invisible to it. On that
   * Conflict the object is read from the API server: `held` is it when it is ours (the caller
   * compares and applies as usual), `problem` says NameTaken when it belongs to someone else.
   */
  async #createOnly(
    mc: MiniCluster,
    rt: ResourceType,
    kind: string,
    obj: Obj,
  ): Promise<
    { applied: Obj; held?: never; problem?: never } | {
      applied?: never;
      held?: Obj;
      problem?: Problem;
    }
  > {
    try {
      const applied = await this.#client.apply<Obj>(rt, {
        ...obj,
        metadata: { ...obj.metadata, resourceVersion: CREATE_ONLY_RESOURCE_VERSION },
      }, { fieldManager: FIELD_MANAGER, force: true });
      return { applied };
    } catch (e) {
      if (!isConflict(e)) throw e;
      const name = obj.metadata!.name!;
      const live = await getOrUndefined<Obj>(this.#client, rt, mc.metadata?.namespace, name);
      // Gone again meanwhile: the Conflict is retried with backoff.
      if (!live) throw e;
      const problem = this.#notOwned(mc, kind, live);
      return problem ? { problem } : { held: live };
    }
  }

  /**
   * Deletes an object we observed, guarded by its uid (never a newer object of the same name);
   * gone already is fine.
   */
  async #delete(
    rt: ResourceType,
    kind: string,
    obj: Obj,
    opts: { propagationPolicy?: "Foreground" | "Background" } = {},
  ): Promise<void> {
    const { namespace, name, uid } = obj.metadata ?? {};
    try {
      await this.#client.delete(rt, namespace, name!, {
        ...opts,
        ...(uid ? { preconditions: { uid } } : {}),
      });
    } catch (e) {
      // NotFound: gone already. Conflict: the uid precondition failed, a new object took the name.
      if (!isNotFound(e) && !isConflict(e)) throw e;
    }
    this.#recent.forget(kind, obj);
  }

  /**
   * A permanent API error becomes a condition (with the API's own message); a transient one is
   * thrown so the controller retries it with backoff.
   */
  #problem(e: unknown, what: string): Problem {
    if (!(e instanceof ApiError) || isRetryable(e) || isConflict(e)) throw e;
    return { reason: "ApiError", message: `${what}: ${errorMessage(e)}` };
  }
}

/** The merge patch of the fields a running Job takes, or undefined when they already match. */
function mutableJobPatch(observed: Job, desired: Job): Record<string, unknown> | undefined {
  const spec: Record<string, unknown> = {};
  for (const field of MUTABLE_JOB_FIELDS) {
    const want = (desired.spec as Record<string, unknown> | undefined)?.[field];
    const have = (observed.spec as Record<string, unknown> | undefined)?.[field];
    if (want !== undefined && want !== have) spec[field] = want;
  }
  const labels = desired.metadata?.labels ?? {};
  const labelsDiffer = Object.entries(labels).some(([k, v]) =>
    observed.metadata?.labels?.[k] !== v
  );
  if (Object.keys(spec).length === 0 && !labelsDiffer) return undefined;
  return {
    ...(labelsDiffer ? { metadata: { labels } } : {}),
    ...(Object.keys(spec).length > 0 ? { spec } : {}),
  };
}

const isHeadless = (s: Obj) => (s as Service).spec?.clusterIP === "None";

/** "namespace/name", the workqueue key of a MiniCluster. */
function keyOf(mc: MiniCluster): string {
  return `${mc.metadata?.namespace}/${mc.metadata?.name}`;
}

/** RFC 3339 without fractional seconds, as metav1.Time serializes. */
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** ConfigMaps and Secrets are compared as the cache keeps them: values as digests (cache_view.ts). */
function comparable<T extends Obj | undefined>(kind: Child["kind"], obj: T): T {
  if (!obj || (kind !== "ConfigMap" && kind !== "Secret")) return obj;
  return dataView(obj as ConfigMap | Secret) as T;
}
