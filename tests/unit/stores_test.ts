import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { Cache, type KubeObject } from "../../runtime/cache/store.ts";
import { podsOf } from "../../controllers/minicluster/kinds/stores.ts";
import { watched } from "../../controllers/minicluster/kinds/child_kinds.ts";
import { JOB_NAME_LABEL, MINICLUSTER_LABEL } from "../../controllers/minicluster/children/names.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";

const pod = (namespace: string, name: string, job: string, mc: string): Pod => ({
  metadata: { namespace, name, labels: { [JOB_NAME_LABEL]: job, [MINICLUSTER_LABEL]: mc } },
});

Deno.test("podsOf: the pods of the MiniCluster's own Job, by the pods' index, and no other", () => {
  const pods = new Cache<KubeObject>("pods", watched("pods").indexes);
  pods.replace([
    pod("a", "flux-0", "flux", "flux"),
    pod("a", "flux-1", "flux", "flux"),
    pod("a", "other-0", "other", "other"),
    pod("b", "flux-0", "flux", "flux"), // a namesake in another namespace
    pod("a", "stray", "flux", "someone-else"), // the Job's label, another MiniCluster's
  ], { synced: true });
  const got = podsOf({ pods: pods as never }, sampleMiniCluster("flux", "a"));
  assert.deepEqual(got.map((p) => p.metadata?.name).sort(), ["flux-0", "flux-1"]);
  assert.deepEqual(podsOf({ pods: pods as never }, sampleMiniCluster("none", "a")), []);
});
