import assert from "node:assert/strict";
import type { MiniClusterSpec } from "../../api/mod.ts";
import { buildPodGroup, gangMinCount } from "../../controllers/minicluster/children/gang.ts";
import type { Sizing } from "../../controllers/minicluster/children/sizing.ts";
import { assertGolden } from "../golden.ts";
import { defaultedMiniCluster } from "./fixtures.ts";

const containers = [{ image: "rockylinux:9", command: "hostname" }];
const mc = (spec: Partial<MiniClusterSpec>) => defaultedMiniCluster({ containers, ...spec });
/** A Job of `pods` pods, its hostlist written for 8. */
const at = (pods: number): Sizing => ({ effectiveSize: pods, maximumSize: 8 });

Deno.test("buildPodGroup golden: a gang of every pod, owned by the MiniCluster", async () => {
  await assertGolden("podgroup/gang.yaml", buildPodGroup(mc({ size: 4, gang: {} }), at(4)));
});

Deno.test("gangMinCount: gang.minCount, else minSize, else size; never above the Job's pods", () => {
  assert.equal(gangMinCount(mc({ size: 4 }), at(4)), undefined, "no gang unless asked");
  assert.equal(buildPodGroup(mc({ size: 4 }), at(4)), undefined);
  assert.equal(gangMinCount(mc({ size: 4, gang: {} }), at(4)), 4);
  assert.equal(gangMinCount(mc({ size: 4, minSize: 3, gang: {} }), at(4)), 3);
  assert.equal(gangMinCount(mc({ size: 4, minSize: 3, gang: { minCount: 2 } }), at(4)), 2);
  // Scaled below the gang (the workspace clamps the size): ganged at its size.
  assert.equal(gangMinCount(mc({ size: 4, gang: { minCount: 4 } }), at(2)), 2);
  // A default follows the size the reconciler builds for.
  assert.equal(gangMinCount(mc({ size: 6, maxSize: 8, gang: {} }), at(6)), 6);
});
