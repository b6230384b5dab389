// Watches a benchmark namespace from outside the operator and timestamps, per MiniCluster, the moment
// its last child appeared and the moment it turned Ready — what a user would see.

import { ChangeWaiter } from "./change_waiter.ts";
import type { MiniCluster } from "../api/mod.ts";
import { KubeClient } from "../runtime/client/client.ts";
import type { ResourceType } from "../runtime/client/resources.ts";
import { MiniClusters } from "../api/resource.ts";
import type { KubeObject } from "../runtime/cache/store.ts";
import { Watcher } from "../runtime/watch/watcher.ts";
import { MANAGED_SELECTOR } from "../controllers/minicluster/controller.ts";

export class CreationObserver {
  readonly #watchers: Watcher<KubeObject>[] = [];
  readonly #children = new Map<string, Set<string>>();
  readonly childrenAt = new Map<string, number>();
  readonly readyAt = new Map<string, number>();
  readonly #waiter = new ChangeWaiter();

  readonly #client: KubeClient;

  /**
   * `childrenPerMiniCluster`: how many children make a MiniCluster complete; `childKinds`: the
   * kinds they are of (the rows of the table of child kinds a benchmark MiniCluster has children
   * of, bench/main.ts: no other watch loads the control plane). The observer gets a client of its
   * own (closed by `stop()`), so its watch streams never share a connection with the benchmark's
   * writes.
   */
  static async open(
    kubeconfig: string,
    namespace: string,
    childrenPerMiniCluster: number,
    childKinds: readonly ResourceType[],
  ): Promise<CreationObserver> {
    const client = await KubeClient.fromKubeconfig(kubeconfig);
    const o = new CreationObserver(client, namespace, childrenPerMiniCluster, childKinds);
    await o.#start();
    return o;
  }

  private constructor(
    client: KubeClient,
    namespace: string,
    readonly childrenPerMiniCluster: number,
    childKinds: readonly ResourceType[],
  ) {
    this.#client = client;
    for (const rt of childKinds) {
      const w = new Watcher<KubeObject>(client, rt, {
        namespaces: [namespace],
        labelSelector: MANAGED_SELECTOR,
        watchTimeoutSeconds: 3600,
      });
      w.store.subscribe((e) => {
        if (e.type !== "deleted") this.#child(rt.kind, e.object);
      });
      this.#watchers.push(w);
    }
    const mcs = new Watcher<KubeObject>(client, MiniClusters, {
      namespaces: [namespace],
      watchTimeoutSeconds: 3600,
    });
    mcs.store.subscribe((e) => {
      if (e.type !== "deleted") this.#miniCluster(e.object as unknown as MiniCluster);
    });
    this.#watchers.push(mcs);
  }

  async #start(): Promise<void> {
    for (const w of this.#watchers) w.start();
    await Promise.all(this.#watchers.map((w) => w.synced));
  }

  /** Stops the watches (giving up on them after 15 s) and closes the client. */
  async stop(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stopped = Promise.all(this.#watchers.map((w) => w.stop())).then(() => true);
    const late = new Promise<boolean>((r) => timer = setTimeout(() => r(false), 15_000));
    const ok = await Promise.race([stopped, late]);
    clearTimeout(timer);
    if (!ok) console.error("[bench] observer: watches did not stop within 15 s; closing anyway");
    this.#client.close();
  }

  #child(kind: string, obj: KubeObject): void {
    const owner = obj.metadata?.ownerReferences?.find((o) => o.controller);
    if (owner?.kind !== "MiniCluster") return;
    let seen = this.#children.get(owner.name);
    if (!seen) this.#children.set(owner.name, seen = new Set());
    seen.add(`${kind}/${obj.metadata?.name}`);
    if (seen.size >= this.childrenPerMiniCluster && !this.childrenAt.has(owner.name)) {
      this.childrenAt.set(owner.name, performance.now());
      this.#waiter.changed();
    }
  }

  #miniCluster(mc: MiniCluster): void {
    const name = mc.metadata?.name;
    if (!name || this.readyAt.has(name)) return;
    const conditions = (mc.status as { conditions?: { type: string; status: string }[] })
      ?.conditions;
    if (conditions?.some((c) => c.type === "Ready" && c.status === "True")) {
      this.readyAt.set(name, performance.now());
      this.#waiter.changed();
    }
  }

  /** Resolves once `done()` holds, checked on every observation; rejects after `timeoutMs`. */
  until(done: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
    return this.#waiter.until(done, timeoutMs, describe);
  }
}
