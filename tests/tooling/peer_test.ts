/**
 * hack/peer/go_operator.ts without building: where the snapshot and the cache are found. (The build
 * itself runs in `deno task conformance`, which needs it.)
 */
import assert from "node:assert/strict";
import { GO_OPERATOR_SNAPSHOT, peerCacheRoot, snapshotPath } from "../../hack/peer/go_operator.ts";

function withEnv(vars: Record<string, string | undefined>, fn: () => void): void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, Deno.env.get(k)]));
  const set = (k: string, v: string | undefined) =>
    v === undefined ? Deno.env.delete(k) : Deno.env.set(k, v);
  try {
    for (const [k, v] of Object.entries(vars)) set(k, v);
    fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) set(k, v);
  }
}

Deno.test("the Go operator's snapshot is beside the repository, unless told otherwise", () => {
  withEnv({ FLUX_OPERATOR_SNAPSHOT: undefined }, () => {
    assert.match(snapshotPath(), new RegExp(`/shared/peers/${GO_OPERATOR_SNAPSHOT}\\.tar\\.gz$`));
  });
  withEnv({ FLUX_OPERATOR_SNAPSHOT: "/elsewhere/op.tar.gz" }, () => {
    assert.equal(snapshotPath(), "/elsewhere/op.tar.gz");
  });
});

Deno.test("builds are cached outside the repository, where the other builds are", () => {
  withEnv({ MINICLUSTER_CACHE: undefined, XDG_CACHE_HOME: undefined, HOME: "/home/x" }, () => {
    assert.equal(peerCacheRoot(), "/home/x/.cache/minicluster-operator/peers");
  });
  withEnv({ MINICLUSTER_CACHE: "/c", XDG_CACHE_HOME: "/x" }, () => {
    assert.equal(peerCacheRoot(), "/c/peers");
  });
  withEnv({ MINICLUSTER_CACHE: undefined, XDG_CACHE_HOME: "/x" }, () => {
    assert.equal(peerCacheRoot(), "/x/minicluster-operator/peers");
  });
});
