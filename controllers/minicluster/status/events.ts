/**
 * Kubernetes Events for a MiniCluster.
 *
 * An Event is emitted when a condition changes its status or its reason — never for a reconcile that
 * changed nothing, so a steady cluster writes no Events — plus a few one-off actions (scaled, cleaned
 * up). Which events a condition change produces is a pure function, unit-tested; the recorder only
 * writes them, and never lets a failed Event write fail the reconcile (Events are best-effort: a
 * namespace being deleted refuses them, and that must not block the finalizer).
 */
import type { Event, ObjectReference } from "kubernetes-types/core/v1.d.ts";
import type { Condition } from "kubernetes-types/meta/v1.d.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import { Events } from "../../../runtime/client/resources.ts";
import {
  FAILED,
  FLUX_VIEW_EMPTY,
  FLUX_VIEW_NOT_MOUNTED,
  GANG_SCHEDULING,
  NEGATIVE_POLARITY,
  READY,
  SUCCEEDED,
} from "./status.ts";
import { GANG_NOT_ENFORCED, GANG_UNAVAILABLE, GANG_UNSCHEDULABLE } from "../gang/gang_condition.ts";
import { DRAIN_GRACE_EXPIRED, DRAINING } from "./drain_condition.ts";
import { SUSPENDED_REASON, WAITING_FOR_ADMISSION } from "../lifecycle/lifecycle.ts";
import { MINICLUSTER_API_VERSION, MINICLUSTER_KIND } from "../children/owner.ts";
import { FLUX_QUEUE_OBSERVED, FLUX_QUEUE_PROBLEMS } from "../fluxqueue/observation.ts";

/** The component name Events report (shown as "From" by kubectl describe). */
const EVENT_COMPONENT = "minicluster-operator";

/** An Event to emit, before it is addressed to an object. */
export interface EventSpec {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/**
 * Events for the condition changes between `previous` and `next`.
 *
 * A condition that appears for the first time produces an Event only when it is True (a new
 * MiniCluster is not "not failed" news); after that, every change of status or reason does. The
 * Event's reason is the condition's reason, so `kubectl get events` reads as the story of the
 * conditions; it is a Warning when it reports something wrong (a negative condition turning True,
 * Ready turning False after having been True, Failed).
 */
export function conditionEvents(
  previous: readonly Condition[] | undefined,
  next: readonly Condition[],
): EventSpec[] {
  const out: EventSpec[] = [];
  for (const c of next) {
    const before = previous?.find((p) => p.type === c.type);
    if (before && before.status === c.status && before.reason === c.reason) continue;
    // A condition that starts False is the normal start (no pods yet), except a gang the API
    // server cannot give or the scheduler cannot place, or pods that cannot get Flux: those are
    // worth a Warning at once.
    if (!before && c.status !== "True" && !gangProblem(c) && !noFluxView(c)) continue;
    out.push({ type: warns(c, before) ? "Warning" : "Normal", reason: c.reason, message: text(c) });
  }
  return out;
}

function warns(c: Condition, before: Condition | undefined): boolean {
  if (NEGATIVE_POLARITY.has(c.type)) return c.status === "True";
  if (c.type === READY) {
    // Suspending (or a queue taking the Job back) stops the pods on purpose: not a warning.
    const deliberate = c.reason === SUSPENDED_REASON || c.reason === WAITING_FOR_ADMISSION;
    // Pods that cannot get Flux are wrong from the start, not only once they were ready.
    if (noFluxView(c)) return true;
    return c.status !== "True" && before?.status === "True" && !deliberate;
  }
  if (c.type === SUCCEEDED) return false;
  if (c.type === GANG_SCHEDULING) return gangProblem(c);
  // Jobs were cancelled on a removed rank: its grace period ran out.
  if (c.type === DRAINING) return c.reason === DRAIN_GRACE_EXPIRED;
  // The lead broker cannot be read, or answers nonsense: not its start, nor its end.
  if (c.type === FLUX_QUEUE_OBSERVED) return FLUX_QUEUE_PROBLEMS.has(c.reason ?? "");
  return c.type === FAILED;
}

/** Pods that cannot get Flux: the mounted view is empty, or the runtime cannot mount it. */
function noFluxView(c: Condition): boolean {
  return c.reason === FLUX_VIEW_EMPTY || c.reason === FLUX_VIEW_NOT_MOUNTED;
}

/** A gang the API cannot give, the scheduler cannot place, or a scheduler did not enforce. */
function gangProblem(c: Condition): boolean {
  return c.type === GANG_SCHEDULING &&
    [GANG_UNAVAILABLE, GANG_UNSCHEDULABLE, GANG_NOT_ENFORCED].includes(c.reason ?? "");
}

function text(c: Condition): string {
  const prefix = c.status === "True" ? c.type : `${c.type}=${c.status}`;
  return c.message ? `${prefix}: ${c.message}` : prefix;
}

/** What an Event is about. */
export interface EventSubject {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
  };
}

/** Writes Events; failures are logged by the caller-supplied hook and otherwise ignored. */
export class EventRecorder {
  readonly #client: ApiClient;
  readonly #instance: string;
  readonly #onError: (e: unknown) => void;
  #sequence = 0;

  constructor(
    client: ApiClient,
    opts: { instance?: string; onError?: (e: unknown) => void } = {},
  ) {
    this.#client = client;
    this.#instance = opts.instance ?? EVENT_COMPONENT;
    this.#onError = opts.onError ?? (() => {});
  }

  /** Emits one Event about `mc`; never throws. */
  async emit(mc: EventSubject, spec: EventSpec): Promise<void> {
    const name = mc.metadata?.name;
    const namespace = mc.metadata?.namespace;
    if (!name || !namespace) return;
    const now = new Date().toISOString();
    const involvedObject: ObjectReference = {
      apiVersion: MINICLUSTER_API_VERSION,
      kind: MINICLUSTER_KIND,
      name,
      namespace,
      uid: mc.metadata?.uid,
      resourceVersion: mc.metadata?.resourceVersion,
    };
    const event: Event = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: this.#eventName(name), namespace },
      involvedObject,
      type: spec.type,
      reason: spec.reason,
      // The API limits Event messages to 1 KiB.
      message: spec.message.length > 1024 ? `${spec.message.slice(0, 1021)}...` : spec.message,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      source: { component: EVENT_COMPONENT },
      reportingComponent: EVENT_COMPONENT,
      reportingInstance: this.#instance,
    };
    try {
      // A report: it waits behind the writes that make the children (runtime/pacing/pacing.ts).
      await this.#client.create(Events, event, { priority: "low" });
    } catch (e) {
      this.#onError(e);
    }
  }

  async emitAll(mc: EventSubject, specs: readonly EventSpec[]): Promise<void> {
    for (const spec of specs) await this.emit(mc, spec);
  }

  /** `<object>.<hex time><hex sequence><random>`, in the manner of client-go's Event names. */
  #eventName(object: string): string {
    // The random part keeps two operator processes (a restart, a standby) from colliding.
    const random = crypto.getRandomValues(new Uint16Array(1))[0].toString(16).padStart(4, "0");
    const suffix = `${Date.now().toString(16)}${(this.#sequence++ & 0xff).toString(16)}${random}`;
    return `${object.slice(0, 253 - suffix.length - 1)}.${suffix}`;
  }
}
