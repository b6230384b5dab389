// The contenders of `bench --real`: the view each one's MiniCluster asks for, and the pods of the
// floor of each design (the children `render` gives, created with no operator).
import assert from "node:assert/strict";
import {
  benchMiniCluster,
  floorChildren,
  REAL_CONTENDERS,
  viewFromOf,
} from "../../bench/real/contenders.ts";

Deno.test("bench real contenders: the floor of each design, and the view each MiniCluster asks", async () => {
  assert.deepEqual([...REAL_CONTENDERS], [
    "ours-volume",
    "ours-copy",
    "go",
    "floor-copy",
    "floor-volume",
  ]);
  assert.equal(viewFromOf("go"), undefined);
  const goMc = benchMiniCluster("go", "real-go-2-0", "ns", 2);
  assert.equal(goMc.spec.flux?.container?.viewFrom, undefined, "the Go CRD has no viewFrom");
  assert.equal(
    benchMiniCluster("ours-volume", "x", "ns", 2).spec.flux?.container?.viewFrom,
    "ImageVolume",
  );
  assert.equal(benchMiniCluster("ours-copy", "x", "ns", 2).spec.flux?.container?.viewFrom, "Copy");

  const podSpec = async (c: "floor-volume" | "floor-copy") => {
    const kids = await floorChildren(benchMiniCluster(c, `real-${c}-2-0`, "ns", 2));
    assert.deepEqual(kids.map((k) => k.obj.kind).sort(), ["ConfigMap", "Job", "Secret", "Service"]);
    for (const k of kids) assert.equal(k.obj.metadata.ownerReferences, undefined);
    // deno-lint-ignore no-explicit-any
    return (kids.find((k) => k.obj.kind === "Job")!.obj as any).spec.template.spec;
  };
  const volume = await podSpec("floor-volume");
  assert.deepEqual(volume.initContainers ?? [], [], "the mounted view copies nothing");
  assert.ok(volume.volumes.some((v: { image?: unknown }) => v.image), "an image volume");
  const copy = await podSpec("floor-copy");
  assert.deepEqual(copy.initContainers.map((c: { name: string }) => c.name), ["flux-view"]);
  assert.ok(!copy.volumes.some((v: { image?: unknown }) => v.image));
});
