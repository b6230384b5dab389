/**
 * The nodes' container runtimes and kubelet versions for flux_view_choice.ts, read cheaply: one
 * list of the Nodes at most once a minute, and only when a new Job's mode is to be decided (no
 * watch: at thousands of KWOK nodes a watch would keep every node's heartbeat in the operator's
 * heap and wake it for each one). Of each node only the name and the two versions are kept; the
 * list streams (listEach), so the whole list is never held. Callers that ask while a list is under
 * way share it. An operator refused the list (no `nodes` right) reads them as unknown for as long,
 * and its `auto` copies.
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import type { ApiClient } from "../../../runtime/client/api_client.ts";
import { Nodes } from "../../../runtime/client/resources.ts";
import { isForbidden } from "../../../runtime/client/errors.ts";
import type { NodeRuntime, NodeRuntimeSource } from "./flux_view_choice.ts";

/** How long one list of the nodes answers: runtimes change when nodes are upgraded, rarely. */
export const NODE_RUNTIMES_TTL_MS = 60_000;

export class NodeRuntimes implements NodeRuntimeSource {
  #kept?: { nodes: readonly NodeRuntime[] | undefined; at: number };
  #listing?: Promise<readonly NodeRuntime[] | undefined>;

  constructor(
    readonly client: ApiClient,
    readonly now: () => number = Date.now,
    readonly ttlMs = NODE_RUNTIMES_TTL_MS,
  ) {}

  /**
   * The nodes as listed at most `ttlMs` ago; undefined when the list is forbidden. Another failed
   * list is thrown (the reconcile retries).
   */
  nodes(): Promise<readonly NodeRuntime[] | undefined> {
    const kept = this.#kept;
    if (kept && this.now() - kept.at < this.ttlMs) return Promise.resolve(kept.nodes);
    this.#listing ??= this.#list().finally(() => this.#listing = undefined);
    return this.#listing;
  }

  async #list(): Promise<readonly NodeRuntime[] | undefined> {
    let nodes: NodeRuntime[] | undefined = [];
    try {
      // resourceVersion 0: answered from the API server's watch cache, not from etcd.
      await this.client.listEach<Node>(Nodes, (node) => {
        const info = node.status?.nodeInfo;
        nodes!.push({
          name: node.metadata?.name ?? "",
          containerRuntimeVersion: info?.containerRuntimeVersion ?? "",
          kubeletVersion: info?.kubeletVersion ?? "",
        });
      }, { resourceVersion: "0", dropManagedFields: true });
    } catch (e) {
      if (!isForbidden(e)) throw e;
      nodes = undefined;
    }
    this.#kept = { nodes, at: this.now() };
    return nodes;
  }
}
