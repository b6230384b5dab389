// The fault suite's pure helpers: masking snapshots, parsing API paths, choosing crash points, seeds.
import assert from "node:assert/strict";
import { maskAll } from "./snapshot.ts";
import { parsePath } from "./proxy.ts";
import { crashIndices } from "./crash.ts";
import { randomFor } from "./env.ts";

Deno.test("maskAll hides uids (also inside strings), versions, times, namespace and hashes", () => {
  const objects = (ns: string, uid: string) => [
    {
      kind: "Job",
      metadata: {
        name: "a",
        namespace: ns,
        uid,
        resourceVersion: "17",
        creationTimestamp: "2026-01-01T00:00:00Z",
        annotations: { "flux-framework.org/desired-hash": uid.slice(0, 6) },
        ownerReferences: [{ apiVersion: "v1", kind: "MiniCluster", name: "a", uid: "mc-" + ns }],
      },
      spec: { selector: { matchLabels: { "batch.kubernetes.io/controller-uid": uid } } },
      status: { active: 2 },
    },
    {
      kind: "ConfigMap",
      metadata: { name: "a-entrypoint", namespace: ns, uid: uid + "-cm" },
      data: { host: `a-0.a.${ns}.svc.cluster.local` },
    },
  ];
  assert.deepEqual(maskAll(objects("ns1", "u1"), "ns1"), maskAll(objects("ns2", "u2"), "ns2"));
  const masked = maskAll(objects("ns1", "u1"), "ns1") as Record<string, Record<string, unknown>>;
  assert.equal(masked["Job/a"].status, undefined);
  assert.deepEqual(masked["ConfigMap/a-entrypoint"].data, { host: "a-0.a.<ns>.svc.cluster.local" });
});

Deno.test("maskAll keeps what matters: a changed spec is a difference", () => {
  const job = (
    p: number,
  ) => [{ kind: "Job", metadata: { name: "a", uid: "u" }, spec: { parallelism: p } }];
  assert.notDeepEqual(maskAll(job(2), "ns"), maskAll(job(3), "ns"));
});

Deno.test("parsePath splits core and group paths", () => {
  assert.deepEqual(parsePath("/api/v1/namespaces/n/configmaps/x"), {
    resource: "configmaps",
    namespace: "n",
    name: "x",
    subresource: undefined,
  });
  assert.deepEqual(
    parsePath("/apis/flux-framework.org/v1alpha2/namespaces/n/miniclusters/m/status"),
    {
      resource: "miniclusters",
      namespace: "n",
      name: "m",
      subresource: "status",
    },
  );
  assert.deepEqual(parsePath("/apis/batch/v1/jobs"), {
    resource: "jobs",
    namespace: undefined,
    name: undefined,
    subresource: undefined,
  });
  assert.equal(parsePath("/readyz").resource, "");
});

Deno.test("crashIndices: every write, or first, middle and last", () => {
  assert.deepEqual(crashIndices(4, true), [1, 2, 3, 4]);
  assert.deepEqual(crashIndices(9, false), [1, 5, 9]);
  assert.deepEqual(crashIndices(1, false), [1]);
  assert.deepEqual(crashIndices(0, false), []);
});

Deno.test("faults: a plan's random stream is fixed by the seed and its name", () => {
  const draw = (label: string, seed: number) => {
    const r = randomFor(label, seed);
    return Array.from({ length: 8 }, () => r());
  };
  assert.deepEqual(draw("view a", 1), draw("view a", 1), "the same seed repeats the stream");
  assert.notDeepEqual(draw("view a", 1), draw("view a", 2), "another seed, another stream");
  assert.notDeepEqual(draw("view a", 1), draw("view b", 1), "each plan has its own stream");
  assert.ok(draw("view a", 7).every((x) => x >= 0 && x < 1));
});
