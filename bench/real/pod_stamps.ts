/**
 * Where a broker pod's start-up went, as moments (epoch milliseconds) read after the run from what
 * the API server and the container runtime recorded, with no exec into the pods: the pod's
 * creationTimestamp, its PodScheduled, PodReadyToStartContainers (sandbox) and Initialized
 * conditions, each init container's and container's start and end (`status.*ContainerStatuses`),
 * and from the broker container's log (`kubectl logs --timestamps`, the runtime's nanosecond
 * stamps) the broker's first log line and its joining the instance.
 *
 * The API's stamps are whole seconds (RFC 3339 without fraction): `refineStamp` narrows one with
 * the bench's own polls of the pods when it has them.
 */
import type { ContainerStatus, Pod } from "kubernetes-types/core/v1.d.ts";
import type { StampedLine } from "./timeline.ts";
import { quorumFullAt } from "./timeline.ts";

/** One container's run, epoch milliseconds. */
export interface ContainerStamps {
  name: string;
  startedAt?: number;
  finishedAt?: number;
}

/** The stamps the API server holds for a pod. */
export interface ApiStamps {
  created?: number;
  scheduled?: number;
  sandboxReady?: number;
  initialized?: number;
  /** The first init container's start (none when the pod has no init container). */
  initStarted?: number;
  /** The last init container's end. */
  initFinished?: number;
  /** Every container of the pod started (the latest start). */
  containersStarted?: number;
}

/** The API stamps with a time, in the order a pod reaches them. */
export const API_STAMP_KEYS = [
  "created",
  "scheduled",
  "sandboxReady",
  "initialized",
  "initStarted",
  "initFinished",
  "containersStarted",
] as const satisfies readonly (keyof ApiStamps)[];

/** One pod's stamps: the API's, then the broker's from its log. */
export interface PodStamps extends ApiStamps {
  pod: string;
  /** The Job completion index: 0 is the lead broker. */
  index: number;
  node?: string;
  initContainers: ContainerStamps[];
  containers: ContainerStamps[];
  /** The broker's first log line: the broker process is running (its state machine started). */
  brokerUp?: number;
  /**
   * A follower: its `parent-ready` (connected to its parent, which is past init). The lead: its
   * `quorum-full`, every broker online.
   */
  joined?: number;
}

const at = (s: string | undefined): number | undefined => {
  if (!s) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
};

const condition = (pod: Pod, type: string) =>
  at(
    pod.status?.conditions?.find((c) => c.type === type && c.status === "True")?.lastTransitionTime,
  );

/**
 * A container's first run: a restarted container's state is its latest run, its lastState the one
 * before.
 */
function containerStamps(s: ContainerStatus): ContainerStamps {
  const runs = [s.lastState, s.state].flatMap((st) => {
    if (st?.terminated) {
      return [{ startedAt: at(st.terminated.startedAt), finishedAt: at(st.terminated.finishedAt) }];
    }
    if (st?.running) return [{ startedAt: at(st.running.startedAt), finishedAt: undefined }];
    return [];
  }).filter((r) => r.startedAt !== undefined);
  return { name: s.name, ...(runs[0] ?? {}) };
}

const min = (xs: (number | undefined)[]) => {
  const ys = xs.filter((x): x is number => x !== undefined);
  return ys.length > 0 ? Math.min(...ys) : undefined;
};
/** The latest of all, undefined unless every one is there. */
const allBy = (xs: (number | undefined)[]) =>
  xs.length > 0 && xs.every((x) => x !== undefined) ? Math.max(...(xs as number[])) : undefined;

export function apiStamps(pod: Pod): ApiStamps & {
  initContainers: ContainerStamps[];
  containers: ContainerStamps[];
} {
  const initContainers = (pod.status?.initContainerStatuses ?? []).map(containerStamps);
  const containers = (pod.status?.containerStatuses ?? []).map(containerStamps);
  const hasInit = (pod.spec?.initContainers ?? []).length > 0;
  const containerCount = pod.spec?.containers?.length ?? containers.length;
  return {
    created: at(pod.metadata?.creationTimestamp),
    scheduled: condition(pod, "PodScheduled"),
    sandboxReady: condition(pod, "PodReadyToStartContainers"),
    initialized: condition(pod, "Initialized"),
    initStarted: hasInit ? min(initContainers.map((c) => c.startedAt)) : undefined,
    initFinished: hasInit && initContainers.length === pod.spec!.initContainers!.length
      ? allBy(initContainers.map((c) => c.finishedAt))
      : undefined,
    containersStarted: containers.length === containerCount
      ? allBy(containers.map((c) => c.startedAt))
      : undefined,
    initContainers,
    containers,
  };
}

/**
 * A line the broker itself logged to stderr, not the entrypoint's echo: with log-stderr-mode local,
 * Flux 0.88 prints the syslog severity in angle brackets, then `broker.<severity>[<rank>]: `
 * (`<6>broker.info[0]: quorum-full: quorum->run 1.29s`).
 */
const BROKER_LINE = /^<\d>broker\.[a-z]+\[\d+\]: /;

/** The broker's first own log line: at level 6 its state machine's first transition. */
export function brokerUpAt(lines: StampedLine[]): number | undefined {
  return lines.find((l) => BROKER_LINE.test(l.text))?.at;
}

/** A follower broker's `parent-ready`: connected to its parent, which is past its init. */
export function parentReadyAt(lines: StampedLine[]): number | undefined {
  return lines.find((l) => BROKER_LINE.test(l.text) && /\bparent-ready:/.test(l.text))?.at;
}

export const completionIndex = (pod: Pod): number =>
  Number(pod.metadata?.labels?.["batch.kubernetes.io/job-completion-index"] ?? NaN);

/** A pod's stamps from its object and its broker container's stamped log. */
export function podStamps(pod: Pod, brokerLog: StampedLine[]): PodStamps {
  const index = completionIndex(pod);
  return {
    pod: pod.metadata?.name ?? "",
    index,
    node: pod.spec?.nodeName,
    ...apiStamps(pod),
    brokerUp: brokerUpAt(brokerLog),
    joined: index === 0 ? quorumFullAt(brokerLog) : parentReadyAt(brokerLog),
  };
}

/**
 * One API stamp (whole seconds, truncated) narrowed by polls: the moment lies in [stamp,
 * stamp + 1 s), after the last poll that was sent before it showed (`absentFrom`, the request's
 * send time) and before the first poll that showed it (`presentBy`, the answer's arrival). The
 * middle of what is left, or the stamp itself when the polls do not overlap its second.
 */
export function refineStamp(stamp: number, absentFrom?: number, presentBy?: number): number {
  const lo = Math.max(stamp, absentFrom ?? -Infinity);
  const hi = Math.min(stamp + 1000, presentBy ?? Infinity);
  if (!(hi > lo)) return stamp;
  return Math.round((lo + hi) / 2);
}

/**
 * What the polls saw of each API stamp of a pod: the last request sent while it was missing, the
 * first answer that had it, and its value then. The value is kept because a finished pod loses its
 * sandbox (PodReadyToStartContainers turns False) before the run is read at the end.
 */
export type PollBounds = Partial<
  Record<
    (typeof API_STAMP_KEYS)[number],
    { absentFrom?: number; presentBy?: number; value?: number }
  >
>;

/**
 * Records one poll's pods into the bounds, by pod name. A pod no poll listed before was created
 * after the previous poll was sent (`previousSentAt`).
 */
export function notePoll(
  bounds: Map<string, PollBounds>,
  pods: Pod[],
  sentAt: number,
  answeredAt: number,
  previousSentAt?: number,
): void {
  for (const pod of pods) {
    const name = pod.metadata?.name ?? "";
    const b = bounds.get(name) ?? { created: { absentFrom: previousSentAt } };
    const stamps = apiStamps(pod);
    for (const key of API_STAMP_KEYS) {
      const seen = b[key] ?? {};
      // Only until first seen: a stamp that goes away later (the sandbox) keeps its bounds.
      if (seen.presentBy !== undefined) continue;
      if (stamps[key] === undefined) seen.absentFrom = sentAt;
      else {
        seen.presentBy = answeredAt;
        seen.value = stamps[key];
      }
      b[key] = seen;
    }
    bounds.set(name, b);
  }
}

/**
 * The pod's API stamps narrowed by the polls' bounds (the log stamps are precise already), a stamp
 * gone by the end taken as the polls saw it; nothing happened before `notBefore`, the create the
 * run is timed from (a pod no poll listed yet has no bound of its own).
 */
export function refined(
  stamps: PodStamps,
  bounds: PollBounds | undefined,
  notBefore: number,
): PodStamps {
  const out = { ...stamps };
  for (const key of API_STAMP_KEYS) {
    const v = stamps[key] ?? bounds?.[key]?.value;
    const absent = Math.max(notBefore, bounds?.[key]?.absentFrom ?? -Infinity);
    if (v !== undefined) out[key] = refineStamp(v, absent, bounds?.[key]?.presentBy);
  }
  return out;
}
