/**
 * Leader election on a coordination.k8s.io/v1 Lease, so that of several replicas exactly one
 * reconciles at a time.
 *
 * The protocol is the one client-go uses, written from its description:
 * - The leader renews the Lease (renewTime) every retry period. Every write carries the Lease's
 *   resourceVersion, so of two replicas racing for it the API server lets exactly one win.
 * - A standby takes the Lease over when its holder is empty or when the Lease has not changed for
 *   leaseDurationSeconds *as measured on the standby's own clock* (from when it last saw the
 *   Lease change), so clock skew between machines does not matter.
 * - A leader that cannot renew within the renew deadline (shorter than the lease duration) gives
 *   up leadership before any standby may take over, so two leaders never overlap as long as the
 *   two clocks run at about the same rate.
 * - On a clean shutdown the leader empties holderIdentity (and sets leaseDurationSeconds to 1), so
 *   a standby takes over at its next retry instead of waiting out the lease.
 */
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import { withJitter } from "./pacing/backoff.ts";
import type { ApiClient } from "./client/api_client.ts";
import { type Clock, sleep, systemClock } from "./core/clock.ts";
import { ApiError, isAlreadyExists, isConflict } from "./client/errors.ts";
import { getOrUndefined } from "./client/get_or_undefined.ts";
import { Leases } from "./client/resources.ts";
import { type RuntimeLog, silentLog } from "./core/log.ts";

interface LeaderElectionOptions {
  namespace: string;
  /** Name of the Lease. */
  name: string;
  /** This replica's name in the Lease; unique among replicas. */
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  clock?: Clock;
  log?: RuntimeLog;
  /** Told whenever leadership starts or stops (e.g. a gauge). */
  onChange?: (leading: boolean) => void;
}

/** Outcome of one acquire-or-renew attempt. */
type Attempt = "held" | "other" | "failed";

/** What ended `hold()`. */
export type HoldResult = "lost" | "stopped";

export class LeaderElector {
  readonly #client: ApiClient;
  readonly #opts: LeaderElectionOptions;
  readonly #clock: Clock;
  readonly #log: RuntimeLog;
  #leading = false;
  /** The resourceVersion of the Lease as last seen, and when (our clock) it last changed. */
  #observedVersion?: string;
  #observedAt = 0;
  /** The last Lease we wrote or read while leading, for release. */
  #current?: Lease;

  constructor(client: ApiClient, opts: LeaderElectionOptions) {
    this.#client = client;
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.log ?? silentLog;
  }

  get identity(): string {
    return this.#opts.identity;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  /** Tries every retry period until this replica holds the Lease; false if stopped first. */
  async acquire(signal: AbortSignal): Promise<boolean> {
    const fields = this.#fields();
    this.#log.info("waiting for leadership", fields);
    let lastHolder: string | undefined;
    while (!signal.aborted) {
      const attempt = await this.#tryAcquireOrRenew();
      if (attempt === "held") {
        this.#setLeading(true);
        this.#log.info("became leader", fields);
        return true;
      }
      const holder = this.#current?.spec?.holderIdentity;
      if (attempt === "other" && holder !== lastHolder) {
        this.#log.info("lease held by another replica", { ...fields, holder });
        lastHolder = holder;
      }
      await sleep(this.#clock, withJitter(this.#opts.retryPeriodMs, 0.2), signal);
    }
    return false;
  }

  /**
   * Renews every retry period while leading. Resolves "lost" when renewal failed for the whole
   * renew deadline or another replica holds the Lease, "stopped" when `signal` aborts (the caller
   * then drains its work and calls `release`).
   */
  async hold(signal: AbortSignal): Promise<HoldResult> {
    let lastRenew = this.#clock.now();
    while (!signal.aborted) {
      await sleep(this.#clock, this.#opts.retryPeriodMs, signal);
      if (signal.aborted) break;
      const attempt = await this.#tryAcquireOrRenew();
      const now = this.#clock.now();
      if (attempt === "held") {
        lastRenew = now;
        continue;
      }
      if (attempt === "other" || now - lastRenew >= this.#opts.renewDeadlineMs) {
        this.#setLeading(false);
        this.#log.error("lost leadership", {
          ...this.#fields(),
          holder: this.#current?.spec?.holderIdentity,
          sinceRenewMs: now - lastRenew,
        });
        return "lost";
      }
    }
    return "stopped";
  }

  /** Gives the Lease up so a standby takes over at once. Safe to call when not leading. */
  async release(): Promise<void> {
    if (!this.#leading) return;
    this.#setLeading(false);
    const lease = this.#current;
    if (!lease || lease.spec?.holderIdentity !== this.#opts.identity) return;
    const now = microTime(this.#clock.now());
    const released: Lease = {
      ...lease,
      spec: {
        ...lease.spec,
        holderIdentity: "",
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
      },
    };
    try {
      await this.#write("PUT", released);
      this.#log.info("released leadership", this.#fields());
    } catch (e) {
      // Someone else already holds it, or the API is unreachable: the lease then simply expires.
      this.#log.warn("could not release the lease", { ...this.#fields(), error: String(e) });
    }
  }

  async #tryAcquireOrRenew(): Promise<Attempt> {
    const { identity, namespace, name } = this.#opts;
    const now = this.#clock.now();
    const durationSeconds = Math.max(1, Math.ceil(this.#opts.leaseDurationMs / 1000));
    let lease: Lease | undefined;
    try {
      lease = await getOrUndefined<Lease>(this.#client, Leases, namespace, name, {
        timeoutMs: this.#requestTimeout(),
      });
    } catch (e) {
      return this.#failed("get", e);
    }

    if (!lease) {
      const created: Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name, namespace },
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      };
      try {
        this.#current = await this.#write("POST", created);
        this.#observe(this.#current, now);
        return "held";
      } catch (e) {
        if (isAlreadyExists(e)) return "other";
        return this.#failed("create", e);
      }
    }

    this.#observe(lease, now);
    this.#current = lease;
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const expiresAt = this.#observedAt + (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder !== "" && holder !== identity && now < expiresAt) return "other";

    const renewing = holder === identity;
    const updated: Lease = {
      ...lease,
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: renewing && spec.acquireTime ? spec.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (renewing ? 0 : 1),
      },
    };
    try {
      this.#current = await this.#write("PUT", updated);
      this.#observe(this.#current, now);
      if (!renewing) this.#log.info("took over the lease", { ...this.#fields(), from: holder });
      return "held";
    } catch (e) {
      // Another replica wrote first: it won this round.
      if (isConflict(e)) return "other";
      return this.#failed("update", e);
    }
  }

  /**
   * POST (create) or PUT (update, guarded by the resourceVersion in `lease`), past every write
   * waiting for a slot: losing the Lease costs more than any of them.
   */
  async #write(method: "POST" | "PUT", lease: Lease): Promise<Lease> {
    const opts = { timeoutMs: this.#requestTimeout(), priority: "critical" as const };
    return method === "POST"
      ? await this.#client.create<Lease>(Leases, lease, opts)
      : await this.#client.replace<Lease>(Leases, lease, opts);
  }

  #observe(lease: Lease, now: number): void {
    const version = lease.metadata?.resourceVersion;
    if (version !== this.#observedVersion) {
      this.#observedVersion = version;
      this.#observedAt = now;
    }
  }

  #failed(what: string, e: unknown): Attempt {
    const error = e instanceof ApiError ? `${e.code} ${e.reason}` : String(e);
    this.#log.warn(`lease ${what} failed`, { ...this.#fields(), error });
    return "failed";
  }

  /** One request must not eat the whole renew deadline. */
  #requestTimeout(): number {
    return Math.max(500, Math.floor(this.#opts.renewDeadlineMs / 2));
  }

  #setLeading(leading: boolean): void {
    if (this.#leading === leading) return;
    this.#leading = leading;
    this.#opts.onChange?.(leading);
  }

  #fields(): Record<string, unknown> {
    return {
      lease: `${this.#opts.namespace}/${this.#opts.name}`,
      identity: this.#opts.identity,
    };
  }
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}
