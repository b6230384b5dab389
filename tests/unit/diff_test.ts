import assert from "node:assert/strict";
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import { withDefaults } from "../../api/mod.ts";
import { desiredChildren } from "../../controllers/minicluster/kinds/desired.ts";
import { sampleMiniCluster } from "../../testing/sample_minicluster.ts";
import {
  canonicalJson,
  DESIRED_HASH_ANNOTATION,
  differingPaths,
  hashOf,
  matchesDesired,
  parseQuantity,
  upToDate,
  withDesiredHash,
} from "../../controllers/minicluster/kinds/diff.ts";

Deno.test("diff: server defaults and extra fields are not drift", () => {
  const desired = {
    metadata: { name: "a", labels: { x: "1" } },
    spec: { containers: [{ name: "c", image: "i", command: ["sh"] }] },
  };
  const observed = {
    metadata: { name: "a", uid: "u", labels: { x: "1", "job-name": "a" }, resourceVersion: "7" },
    spec: {
      containers: [{
        name: "c",
        image: "i",
        command: ["sh"],
        terminationMessagePath: "/dev/termination-log",
        imagePullPolicy: "IfNotPresent",
      }],
      restartPolicy: "Always",
    },
    status: { phase: "Running" },
  };
  assert.deepEqual(differingPaths(observed, desired), []);
  assert.ok(matchesDesired(observed, desired));
});

Deno.test("diff: a changed field is reported with its path", () => {
  const desired = {
    spec: { parallelism: 3, template: { spec: { containers: [{ name: "c", image: "new" }] } } },
  };
  const observed = {
    spec: { parallelism: 2, template: { spec: { containers: [{ name: "c", image: "old" }] } } },
  };
  assert.deepEqual(differingPaths(observed, desired), [
    "spec.parallelism",
    "spec.template.spec.containers[name=c].image",
  ]);
});

Deno.test("diff: zero values match absent fields (omitempty)", () => {
  const desired = { readOnly: false, count: 0, s: "", m: {}, l: [], n: null };
  assert.deepEqual(differingPaths({}, desired), []);
  assert.deepEqual(differingPaths({ readOnly: true }, desired), ["readOnly"]);
});

Deno.test("diff: quantities compare by value under resources only", () => {
  const desired = { resources: { limits: { cpu: "1", memory: "1Gi" }, requests: { cpu: "500m" } } };
  const observed = {
    resources: { limits: { cpu: "1000m", memory: "1024Mi" }, requests: { cpu: "0.5" } },
  };
  assert.deepEqual(differingPaths(observed, desired), []);
  assert.deepEqual(differingPaths({ env: { value: "1000m" } }, { env: { value: "1" } }), [
    "env.value",
  ]);
  assert.equal(parseQuantity("1.5Gi"), 1.5 * 2 ** 30);
  assert.equal(parseQuantity("1e3"), 1000);
  assert.equal(parseQuantity("abc"), undefined);
});

Deno.test("diff: named lists match by name, allow server-added items, but keep order", () => {
  const desired = { volumes: [{ name: "a", emptyDir: {} }, { name: "b" }] };
  const observed = {
    volumes: [{ name: "a", emptyDir: {} }, { name: "b" }, {
      name: "kube-api-access-x",
      projected: {},
    }],
  };
  assert.deepEqual(differingPaths(observed, desired), []);
  assert.deepEqual(differingPaths({ volumes: [{ name: "a" }] }, desired), ["volumes[name=b]"]);
  assert.deepEqual(differingPaths({ volumes: [{ name: "b" }, { name: "a" }] }, desired), [
    "volumes",
  ]);
});

Deno.test("diff: unnamed lists are positional; the observed list may be longer", () => {
  const desired = { tolerations: [{ key: "a" }] };
  assert.deepEqual(
    differingPaths({ tolerations: [{ key: "a" }, { key: "not-ready" }] }, desired),
    [],
  );
  assert.deepEqual(differingPaths({ tolerations: [{ key: "b" }] }, desired), [
    "tolerations[0].key",
  ]);
  assert.deepEqual(differingPaths({ args: ["x"] }, { args: ["x", "y"] }), ["args"]);
});

Deno.test("diff: the hash is stable across key order and catches removed fields", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: 2, c: 3 } }),
    canonicalJson({ a: { c: 3, d: 2 }, b: 1 }),
  );
  assert.equal(hashOf({ b: 1, a: 2 }), hashOf({ a: 2, b: 1 }));

  const before: { metadata?: ObjectMeta } = withDesiredHash({
    metadata: { name: "x", labels: { a: "1", b: "2" } },
  });
  const after = withDesiredHash({ metadata: { name: "x", labels: { a: "1" } } });
  assert.ok(before.metadata?.annotations?.[DESIRED_HASH_ANNOTATION]);
  assert.ok(upToDate(before, before));
  // The old object still holds every field of the new desired one, but was applied from another.
  assert.ok(matchesDesired(before, { metadata: { name: "x", labels: { a: "1" } } }));
  assert.ok(!upToDate(before, after));
  assert.ok(!upToDate(undefined, after));
});

/** The canonical JSON and hash as first written (a replacer sorting keys, WebCrypto's digest). */
function referenceJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = v[k];
    return sorted;
  });
}

async function referenceHash(value: unknown): Promise<string> {
  const bytes = new TextEncoder().encode(referenceJson(value));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest.slice(0, 12), (b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("diff: canonical JSON and hash are the ones existing children carry", async () => {
  const values: unknown[] = [
    { b: 1, a: { d: 2, c: 3 } },
    { "10": "x", "9": "y", "a": 1, "01": 2, "4294967295": 3, "4294967294": 4, "-1": 5 },
    [1, undefined, () => 1, null, { z: undefined, y: [undefined] }],
    { s: 'quo"te\\ \n \u2028 é 😀', n: [0, -0, 1.5, 1e21, 1e-7, NaN, Infinity], t: true, f: false },
    { nested: { deeper: { list: [{ b: "2", a: "1" }, []], empty: {} } } },
  ];
  for (const mcSize of [1, 3]) {
    const mc = sampleMiniCluster("hash", "ns", { size: mcSize });
    mc.metadata = { ...mc.metadata, uid: "0b9c-uid" };
    const d = await desiredChildren(withDefaults(mc), {
      effectiveSize: mcSize,
      maximumSize: mcSize + 2,
    });
    values.push(d.configMap, d.job, ...d.services);
  }
  for (const v of values) {
    assert.equal(canonicalJson(v), referenceJson(v));
    assert.equal(hashOf(v), await referenceHash(v));
  }
});
