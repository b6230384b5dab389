/**
 * docs/objects.svg is what hack/object-diagram.ts draws from the table of child kinds, and the
 * drawing has a box for every row and the relations the brief of the diagram promises.
 */
import assert from "node:assert/strict";
import { CHILD_KINDS } from "../../controllers/minicluster/kinds/child_kinds.ts";
import { diagram, objectsSvg } from "../../hack/object-diagram.ts";

Deno.test("object diagram: docs/objects.svg is fresh", async () => {
  const committed = await Deno.readTextFile(new URL("../../docs/objects.svg", import.meta.url));
  assert.equal(committed, await objectsSvg(), "run `deno run -A hack/object-diagram.ts`");
});

Deno.test("object diagram: a box per row, owned by the MiniCluster when written", async () => {
  const { boxes, edges } = await diagram();
  for (const row of CHILD_KINDS) {
    const box = boxes.find((b) => b.title.startsWith(row.rt.kind));
    assert.ok(box, `no box for ${row.rt.kind}`);
    if (row.wave === undefined) continue;
    assert.ok(
      edges.some((e) => e.from === "MiniCluster" && e.to === box.id && e.relation === "owns"),
      `${box.id} is not owned by the MiniCluster`,
    );
  }
  const has = (from: string, to: string, relation: string) =>
    assert.ok(
      edges.some((e) => e.from.startsWith(from) && e.to.startsWith(to) && e.relation === relation),
      `${from} ${relation} ${to}`,
    );
  has("Job/", "pods", "owns");
  has("Service/", "pods", "selects");
  has("pods", "ConfigMap/", "mounts");
  has("pods", "Secret/", "mounts");
  has("pods", "PodGroup/", "names");
  has("MiniClusterWorkspace/", "ConfigMap/", "sizes");
});
