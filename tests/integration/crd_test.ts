/**
 * The MiniCluster CRD on a real kube-apiserver: the valid fixtures (our own and the Go Flux
 * Operator's examples, unchanged) are accepted and read back with exactly the defaults withDefaults
 * predicts; each invalid fixture is rejected with the message in its `# expect:` lines; the scale
 * and status subresources, printer columns and `kubectl explain` work as documented.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { type MiniCluster, withDefaults } from "../../api/mod.ts";
import { ApiError } from "../../runtime/client/errors.ts";
import { resourcePath } from "../../runtime/client/resources.ts";
import { MiniClusters } from "../../api/resource.ts";
import type { KubeClient } from "../../runtime/client/client.ts";
import { INLINE_CURVE_CERT_OPT_IN } from "../../controllers/minicluster/policy/curve_source.ts";
import { eventually, integrationTest, kubectl } from "../harness.ts";

const ROOT = new URL("../../", import.meta.url);
const FIXTURES = new URL("tests/fixtures/manifests/", ROOT);

interface Fixture {
  file: string;
  path: string;
  manifest: MiniCluster;
  expect: string[];
}

async function fixtures(kind: "valid" | "invalid"): Promise<Fixture[]> {
  const dir = new URL(`${kind}/`, FIXTURES);
  const out: Fixture[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.endsWith(".yaml")) continue;
    const url = new URL(entry.name, dir);
    const text = await Deno.readTextFile(url);
    const expect = [...text.matchAll(/^# expect: (.+)$/gm)].map((m) => m[1].trim());
    out.push({ file: entry.name, path: url.pathname, manifest: parse(text), expect });
  }
  return out.sort((a, b) => a.file.localeCompare(b.file));
}

/** POST with strict field validation, as kubectl does: unknown fields are errors, not pruned. */
function createStrict(client: KubeClient, namespace: string, mc: MiniCluster) {
  return client.request<MiniCluster>(
    "POST",
    resourcePath(MiniClusters, { namespace }),
    { ...mc, metadata: { ...mc.metadata, namespace } },
    { query: { fieldValidation: "Strict" }, verb: "create", resource: "miniclusters" },
  );
}

type Json = Record<string, unknown>;

/** Every leaf of `part` is present with the same value in `whole`. */
function assertSubset(part: unknown, whole: unknown, path: string) {
  if (part !== null && typeof part === "object" && !Array.isArray(part)) {
    assert.ok(whole !== null && typeof whole === "object", `${path}: expected an object`);
    for (const [k, v] of Object.entries(part)) assertSubset(v, (whole as Json)[k], `${path}.${k}`);
  } else if (Array.isArray(part)) {
    assert.ok(Array.isArray(whole) && whole.length === part.length, `${path}: list differs`);
    part.forEach((v, i) => assertSubset(v, (whole as unknown[])[i], `${path}[${i}]`));
  } else {
    assert.deepEqual(whole, part, path);
  }
}

const minimal = (
  namespace: string,
  name: string,
  spec: Partial<MiniCluster["spec"]> = {},
): MiniCluster => ({
  apiVersion: "flux-framework.org/v1alpha2",
  kind: "MiniCluster",
  metadata: { name, namespace },
  spec: { containers: [{ image: "ubuntu:noble", command: "hostname" }], ...spec },
});

integrationTest("valid MiniClusters are accepted and read back with defaults", async (env) => {
  const valid = await fixtures("valid");
  assert.ok(valid.filter((f) => f.file.startsWith("go-")).length >= 10);
  for (const { file, manifest } of valid) {
    const created = await createStrict(env.client, env.namespace, manifest).catch((e) => {
      throw new Error(`${file} was rejected: ${e.message}`);
    });
    const stored = await env.client.get<MiniCluster>(
      MiniClusters,
      env.namespace,
      created.metadata!.name!,
    );
    const expected = withDefaults(manifest).spec;
    // Every field the apiserver stored (user's and defaulted) is what withDefaults predicts...
    assertSubset(stored.spec, expected, `${file}: spec`);
    // ...nothing was pruned, and no default is left to the reconciler that the CRD could apply.
    assert.deepEqual(withDefaults(stored).spec, expected, `${file}: spec`);
    for (const field of ["size", "tasks", "deadlineSeconds", "interactive", "cleanup"] as const) {
      assert.notEqual(stored.spec[field], undefined, `${file}: spec.${field} not defaulted`);
    }
    // spec.flux is defaulted inside only, as by the Go operator's CRD (its connectTimeout default
    // must not reach MiniClusters without spec.flux).
    if (manifest.spec.flux) {
      assert.ok(stored.spec.flux?.container?.image, `${file}: flux.container.image not defaulted`);
      assert.notEqual(stored.spec.flux?.scheduler?.queuePolicy, undefined, `${file}: queuePolicy`);
      assert.notEqual(stored.spec.flux?.connectTimeout, undefined, `${file}: connectTimeout`);
    } else {
      assert.equal(stored.spec.flux, undefined, `${file}: spec.flux was defaulted`);
    }
    assert.notEqual(stored.spec.logging?.quiet, undefined, `${file}: logging not defaulted`);
    for (const c of stored.spec.containers) assert.ok(c.image, `${file}: image not defaulted`);
    await env.client.delete(MiniClusters, env.namespace, created.metadata!.name!);
  }
  // The same files through kubectl (client-side parsing, strict server-side validation).
  const out = await kubectl(
    env,
    "create",
    "--dry-run=server",
    ...valid.flatMap((f) => ["-f", f.path]),
    "-o",
    "name",
  );
  assert.equal(out.trim().split("\n").length, valid.length);
}, {
  // The Go operator's examples carry flux.curveCert, accepted by the CRD unchanged; the install's
  // admission policy (tests/integration/inline_curve_cert_policy_test.ts) refuses it where the
  // namespace has not opted in.
  namespaceLabels: { [INLINE_CURVE_CERT_OPT_IN.label]: INLINE_CURVE_CERT_OPT_IN.value },
});

integrationTest("invalid MiniClusters are rejected with a clear message", async (env) => {
  const invalid = await fixtures("invalid");
  assert.ok(invalid.length >= 30);
  const failures: string[] = [];
  for (const { file, manifest, expect } of invalid) {
    assert.ok(expect.length > 0, `${file} has no '# expect:' line`);
    try {
      await createStrict(env.client, env.namespace, manifest);
      failures.push(`${file}: was accepted`);
      await env.client.delete(MiniClusters, env.namespace, manifest.metadata!.name!);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      const message = e.status.message ?? e.message;
      for (const want of expect) {
        if (!message.includes(want)) failures.push(`${file}: expected "${want}" in: ${message}`);
      }
    }
  }
  assert.deepEqual(failures, []);
});

integrationTest("kubectl apply of a rejected manifest prints the message", async (env) => {
  const path = new URL("invalid/two-flux-containers.yaml", FIXTURES).pathname;
  await assert.rejects(
    kubectl(env, "apply", "-f", path),
    /exactly one must set runFlux: true/,
  );
});

integrationTest("kubectl scale changes spec.size within maxSize", async (env) => {
  await env.client.create(
    MiniClusters,
    minimal(env.namespace, "scaled", { size: 2, maxSize: 4 }),
    {},
  );
  await kubectl(env, "scale", "mc/scaled", "--replicas=3");
  const scaled = await env.client.get<MiniCluster>(MiniClusters, env.namespace, "scaled");
  assert.equal(scaled.spec.size, 3);
  await assert.rejects(
    kubectl(env, "scale", "mc/scaled", "--replicas=5"),
    /maxSize must be greater than or equal to size/,
  );

  // The scale subresource reads status.size and status.selector (what an HPA sees).
  await env.client.patch(
    MiniClusters,
    env.namespace,
    "scaled",
    {
      status: { size: 3, selector: "hpa-selector=scaled" },
    },
    "merge",
    { subresource: "status" },
  );
  const scale = await env.client.request<{
    spec: { replicas: number };
    status: { replicas: number; selector: string };
  }>(
    "GET",
    resourcePath(MiniClusters, { namespace: env.namespace, name: "scaled", subresource: "scale" }),
  );
  assert.deepEqual(scale.spec, { replicas: 3 });
  assert.deepEqual(scale.status, { replicas: 3, selector: "hpa-selector=scaled" });
});

integrationTest("status is a subresource with map-keyed conditions", async (env) => {
  await env.client.create(MiniClusters, minimal(env.namespace, "status"), {});
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const condition = (type: string, status: string, reason: string) => ({
    type,
    status,
    reason,
    message: `${type} is ${status}`,
    lastTransitionTime: now,
    observedGeneration: 1,
  });
  await env.client.apply(MiniClusters, {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "status", namespace: env.namespace },
    status: {
      observedGeneration: 1,
      size: 1,
      readyPods: 1,
      selector: "hpa-selector=status",
      jobid: "status",
      maximumSize: 1,
      conditions: [condition("Ready", "True", "Ready"), condition("Progressing", "False", "Done")],
    },
  }, { fieldManager: "status-writer", subresource: "status" });
  // A second manager owns another condition; list-type map merges by type.
  await env.client.apply(MiniClusters, {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "status", namespace: env.namespace },
    status: { conditions: [condition("Audited", "True", "Checked")] },
  }, { fieldManager: "auditor", subresource: "status" });
  const got = await env.client.get<MiniCluster>(MiniClusters, env.namespace, "status");
  assert.deepEqual(got.status?.conditions?.map((c) => c.type), ["Ready", "Progressing", "Audited"]);
  assert.equal(got.metadata?.generation, 1, "a status write does not bump the generation");
  // Writes to the main resource cannot change status.
  await env.client.patch(MiniClusters, env.namespace, "status", { status: { size: 9 } }, "merge");
  const after = await env.client.get<MiniCluster>(MiniClusters, env.namespace, "status");
  assert.equal(after.status?.size, 1);
  // Condition shape is enforced.
  await assert.rejects(
    env.client.patch(
      MiniClusters,
      env.namespace,
      "status",
      {
        status: { conditions: [{ type: "Ready", status: "Maybe", reason: "x", message: "" }] },
      },
      "merge",
      { subresource: "status" },
    ),
    /Unsupported value: "Maybe"/,
  );
});

integrationTest("kubectl get mc shows size, ready pods, status and age", async (env) => {
  await env.client.create(
    MiniClusters,
    minimal(env.namespace, "columns", { size: 4, maxSize: 8 }),
    {},
  );
  await env.client.patch(
    MiniClusters,
    env.namespace,
    "columns",
    {
      status: {
        readyPods: 3,
        maximumSize: 8,
        conditions: [{
          type: "Ready",
          status: "False",
          reason: "PodsNotReady",
          message: "3 of 4 pods are ready",
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
        }],
      },
    },
    "merge",
    { subresource: "status" },
  );
  const table = await kubectl(env, "get", "mc");
  const [header, row] = table.trim().split("\n").map((l) => l.trim().split(/\s+/));
  assert.deepEqual(header, ["NAME", "SIZE", "READY", "STATUS", "AGE"]);
  assert.deepEqual(row.slice(0, 4), ["columns", "4", "3", "PodsNotReady"]);
  const wide = await kubectl(env, "get", "minicluster", "columns", "-o", "wide");
  assert.match(wide.split("\n")[0], /NAME\s+SIZE\s+READY\s+STATUS\s+SUSPENDED\s+MAX\s+AGE/);
  // The category and short name find it too.
  assert.match(await kubectl(env, "get", "flux"), /columns/);
});

integrationTest("kubectl explain documents the spec", async (env) => {
  const explain = await eventually(async () => {
    const out = await kubectl(env, "explain", "minicluster.spec.flux");
    if (!out.includes("connectTimeout")) throw new Error(`no fields yet: ${out}`);
    return out;
  }, { timeoutMs: 30_000, intervalMs: 500 });
  assert.match(explain, /How Flux is installed, configured and started/);
  assert.match(explain, /connectTimeout\s+<string>/);
  assert.match(explain, /tbon\.connect_timeout/);
  const container = await kubectl(env, "explain", "mc.spec.containers.volumes");
  assert.match(container, /Volumes to mount in this container/);
});
