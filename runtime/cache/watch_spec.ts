/** How a kind is watched: its selectors and what its cache keeps (Manager.watch, the child-kind table). */
import type { IndexFunc, KubeObject } from "./store.ts";
import type { Transform } from "./transforms.ts";

export interface WatchSpec {
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * What the store keeps of each object (transforms.ts). One store per kind and selectors is
   * shared, so every caller must ask for the same transform (`Manager.watch` refuses another one).
   */
  transform?: Transform<KubeObject>;
  /** Extra store indexes (store.ts), fixed by the first caller like the transform. */
  indexes?: Record<string, IndexFunc<KubeObject>>;
  /** Watched only where the API server serves the kind (runtime/watch/watcher.ts), looked at this often. */
  whereServed?: { recheckMs: number };
}
