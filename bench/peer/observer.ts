/**
 * Watches a namespace from outside both operators and timestamps, per MiniCluster, the moment its
 * last child appeared and the moment all its pods were Ready. Unlike bench/observer.ts it relies
 * on nothing only our operator does (labels, a Ready condition): a child is an object whose
 * owner is the MiniCluster, a MiniCluster's pods are those of the Job it owns, Ready is the pod's
 * Ready condition. So the Go operator's MiniClusters are timed exactly like ours.
 */
import { ChangeWaiter } from "../change_waiter.ts";
import { KubeClient } from "../../runtime/client/client.ts";
import { Pods, type ResourceType } from "../../runtime/client/resources.ts";
import type { KubeObject } from "../../runtime/cache/store.ts";
import { Watcher } from "../../runtime/watch/watcher.ts";

interface PodLike extends KubeObject {
  status?: { conditions?: { type: string; status: string }[] };
}

export class PeerObserver {
  readonly #watchers: Watcher<KubeObject>[] = [];
  readonly #children = new Map<string, Set<string>>();
  /** Job name → its MiniCluster. */
  readonly #jobOwner = new Map<string, string>();
  /** Job name → its Ready pods. */
  readonly #readyPods = new Map<string, Set<string>>();
  readonly childrenAt = new Map<string, number>();
  readonly readyAt = new Map<string, number>();
  readonly #waiter = new ChangeWaiter();
  readonly #client: KubeClient;

  static async open(
    kubeconfig: string,
    namespace: string,
    children: number,
    podsPerMiniCluster: number,
    childKinds: ResourceType[],
  ): Promise<PeerObserver> {
    const o = new PeerObserver(
      await KubeClient.fromKubeconfig(kubeconfig),
      namespace,
      children,
      podsPerMiniCluster,
      childKinds,
    );
    for (const w of o.#watchers) w.start();
    await Promise.all(o.#watchers.map((w) => w.synced));
    return o;
  }

  private constructor(
    client: KubeClient,
    namespace: string,
    readonly children: number,
    readonly podsPerMiniCluster: number,
    childKinds: ResourceType[],
  ) {
    this.#client = client;
    const watch = (rt: ResourceType, fn: (o: KubeObject) => void) => {
      const w = new Watcher<KubeObject>(client, rt, {
        namespaces: [namespace],
        watchTimeoutSeconds: 3600,
      });
      w.store.subscribe((e) => {
        if (e.type !== "deleted") fn(e.object);
      });
      this.#watchers.push(w);
    };
    for (const rt of childKinds) watch(rt, (o) => this.#child(rt.kind, o));
    watch(Pods, (o) => this.#pod(o as PodLike));
  }

  #child(kind: string, obj: KubeObject): void {
    const owner = obj.metadata?.ownerReferences?.find((o) => o.kind === "MiniCluster");
    if (!owner) return;
    if (kind === "Job") {
      this.#jobOwner.set(obj.metadata!.name!, owner.name);
      this.#checkReady(obj.metadata!.name!);
    }
    let seen = this.#children.get(owner.name);
    if (!seen) this.#children.set(owner.name, seen = new Set());
    seen.add(`${kind}/${obj.metadata?.name}`);
    if (seen.size >= this.children && !this.childrenAt.has(owner.name)) {
      this.childrenAt.set(owner.name, performance.now());
      this.#waiter.changed();
    }
  }

  #pod(pod: PodLike): void {
    const job = pod.metadata?.ownerReferences?.find((o) => o.kind === "Job")?.name;
    if (!job) return;
    if (!pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) return;
    let ready = this.#readyPods.get(job);
    if (!ready) this.#readyPods.set(job, ready = new Set());
    ready.add(pod.metadata!.name!);
    this.#checkReady(job);
  }

  #checkReady(job: string): void {
    const mc = this.#jobOwner.get(job);
    if (!mc || this.readyAt.has(mc)) return;
    if ((this.#readyPods.get(job)?.size ?? 0) < this.podsPerMiniCluster) return;
    this.readyAt.set(mc, performance.now());
    this.#waiter.changed();
  }

  /** Resolves once `done()` holds, checked on every observation; rejects after `timeoutMs`. */
  until(done: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
    return this.#waiter.until(done, timeoutMs, describe);
  }

  /** `ChangeWaiter.untilOrStalled` over this observer's observations. */
  untilOrStalled(done: () => boolean, progress: () => number, stallMs: number): Promise<boolean> {
    return this.#waiter.untilOrStalled(done, progress, stallMs);
  }

  async stop(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((r) => timer = setTimeout(r, 15_000));
    await Promise.race([Promise.all(this.#watchers.map((w) => w.stop())), late]);
    clearTimeout(timer);
    this.#client.close();
  }
}
