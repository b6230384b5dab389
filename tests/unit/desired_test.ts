import assert from "node:assert/strict";
import { type MiniCluster, withDefaults } from "../../api/mod.ts";
import { BuildError, desiredChildren } from "../../controllers/minicluster/kinds/desired.ts";
import { TEMPLATE_HASH_ANNOTATION } from "../../controllers/minicluster/kinds/owned_children.ts";
import { childrenInOrder } from "../../controllers/minicluster/kinds/child_kinds.ts";
import { generateCurveCertificate } from "../../controllers/minicluster/children/curve.ts";
import { DESIRED_HASH_ANNOTATION } from "../../controllers/minicluster/kinds/diff.ts";
import {
  MANAGED_BY_LABEL,
  MINICLUSTER_LABEL,
} from "../../controllers/minicluster/children/names.ts";

function mc(spec: Partial<MiniCluster["spec"]> = {}): MiniCluster {
  return {
    apiVersion: "flux-framework.org/v1alpha2",
    kind: "MiniCluster",
    metadata: { name: "flux", namespace: "ns", uid: "mc-uid", generation: 1 },
    spec: { containers: [{ image: "app", command: "hostname" }], size: 2, maxSize: 4, ...spec },
  };
}

Deno.test("desired: every child is owned, labelled and hashed", async () => {
  const d = await desiredChildren(withDefaults(mc()), { effectiveSize: 2, maximumSize: 4 });
  const all = [...childrenInOrder(d).map((c) => c.object), d.job];
  assert.deepEqual(childrenInOrder(d).map((c) => `${c.kind}/${c.object.metadata?.name}`), [
    "ConfigMap/flux-entrypoint",
    "Service/flux",
  ]);
  for (const obj of all) {
    assert.equal(obj.metadata?.namespace, "ns");
    assert.equal(obj.metadata?.ownerReferences?.[0].uid, "mc-uid");
    assert.equal(obj.metadata?.ownerReferences?.[0].controller, true);
    assert.equal(obj.metadata?.labels?.[MANAGED_BY_LABEL], "minicluster-operator");
    assert.equal(obj.metadata?.labels?.[MINICLUSTER_LABEL], "flux");
    assert.match(obj.metadata?.annotations?.[DESIRED_HASH_ANNOTATION] ?? "", /^[0-9a-f]{24}$/);
  }
  assert.equal(d.job.spec?.parallelism, 2);
  assert.equal(d.job.spec?.completions, 2);
  assert.ok(d.job.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION]);
  assert.equal(d.servicesPod, undefined);
  assert.equal(d.curveSecret, undefined);
});

Deno.test("desired: the hostlist is written for the bootstrapped maximum, not the spec's", async () => {
  const d = await desiredChildren(withDefaults(mc({ maxSize: 10 })), {
    effectiveSize: 2,
    maximumSize: 4,
  });
  const scripts = Object.values(d.configMap.data ?? {}).join("\n");
  assert.match(scripts, /flux-\[0-3\]/);
  assert.doesNotMatch(scripts, /flux-\[0-9\]/);
});

Deno.test("desired: equal specs give equal hashes; scaling keeps the template hash", async () => {
  const a = await desiredChildren(withDefaults(mc()), { effectiveSize: 2, maximumSize: 4 });
  const b = await desiredChildren(withDefaults(mc()), { effectiveSize: 2, maximumSize: 4 });
  assert.deepEqual(a, b);
  const scaled = await desiredChildren(withDefaults(mc()), { effectiveSize: 3, maximumSize: 4 });
  assert.equal(scaled.job.spec?.parallelism, 3);
  assert.equal(
    scaled.job.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION],
    a.job.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION],
  );
  assert.notEqual(
    scaled.job.metadata?.annotations?.[DESIRED_HASH_ANNOTATION],
    a.job.metadata?.annotations?.[DESIRED_HASH_ANNOTATION],
  );
  const image = await desiredChildren(
    withDefaults(mc({ containers: [{ image: "other", command: "hostname" }] })),
    { effectiveSize: 2, maximumSize: 4 },
  );
  assert.notEqual(
    image.job.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION],
    a.job.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION],
  );
});

Deno.test("desired: services pod and per-container Services", async () => {
  const d = await desiredChildren(
    withDefaults(mc({
      containers: [
        { image: "app", command: "hostname", runFlux: true },
        { name: "db", image: "postgres", ports: [5432] },
      ],
      services: [{ name: "api", image: "nginx", ports: [80] }],
    })),
    { effectiveSize: 2, maximumSize: 4 },
  );
  assert.deepEqual(childrenInOrder(d).map((c) => `${c.kind}/${c.object.metadata?.name}`), [
    "ConfigMap/flux-entrypoint",
    "Service/flux",
    "Service/flux-db",
    "Pod/flux-services",
  ]);
});

Deno.test("desired: an AppArmor annotation naming a container no pod has is a build error", async () => {
  const apparmor = "container.apparmor.security.beta.kubernetes.io/";
  const spec = (annotations: Record<string, string>) =>
    withDefaults(mc({
      containers: [{ image: "app", command: "hostname" }],
      services: [{ name: "api", image: "nginx" }],
      pod: { annotations },
    }));
  const e = await desiredChildren(spec({ [`${apparmor}apii`]: "runtime/default" }), {
    effectiveSize: 2,
    maximumSize: 4,
  }).then(() => undefined, (e) => e);
  assert.ok(e instanceof BuildError, "accepted an annotation naming no container");
  assert.equal(
    e.message,
    `spec.pod.annotations: "${apparmor}apii" names container "apii", which no pod of the MiniCluster has (the Job's pods: flux-view, flux; the services pod: api)`,
  );
  // Each container named by its own pod's annotation is fine.
  await desiredChildren(spec({ [`${apparmor}flux`]: "runtime/default", [`${apparmor}api`]: "" }), {
    effectiveSize: 2,
    maximumSize: 4,
  });
});

Deno.test("desired: a broken curveCert is a build error, a given one becomes the Secret", async () => {
  await assert.rejects(
    desiredChildren(withDefaults(mc({ flux: { curveCert: "not a certificate" } })), {
      effectiveSize: 2,
      maximumSize: 4,
    }),
    BuildError,
  );
  const cert = (await generateCurveCertificate()).text;
  const d = await desiredChildren(withDefaults(mc({ flux: { curveCert: cert } })), {
    effectiveSize: 2,
    maximumSize: 4,
  });
  assert.equal(d.curveSecret?.metadata?.name, "flux-curve-cert");
  assert.equal(d.curveSecret?.metadata?.ownerReferences?.[0].uid, "mc-uid");
  assert.ok(childrenInOrder(d).some((c) => c.kind === "Secret"));
});

Deno.test("desired: a curveCert real Flux would refuse is a build error saying why", async () => {
  const [a, b] = await Promise.all([generateCurveCertificate(), generateCurveCertificate()]);
  const refused = async (curveCert: string) => {
    const e = await desiredChildren(withDefaults(mc({ flux: { curveCert } })), {
      effectiveSize: 2,
      maximumSize: 4,
    }).then(() => undefined, (e) => e);
    assert.ok(e instanceof BuildError, `accepted: ${curveCert}`);
    assert.ok(!e.message.includes(a.secretKey) && !e.message.includes(b.secretKey));
    return e.message;
  };
  // Keys of two pairs: every broker would fail to load it ("Invalid argument").
  const mixed = a.text.replace(a.publicKey, b.publicKey);
  assert.match(await refused(mixed), /^spec\.flux\.curveCert: .*not the secret-key's public key/);
  // Metadata Flux's reader refuses, and a key line that is not indented.
  assert.match(await refused(a.text.replace("flux-cert-generator", "flux_cert")), /has "_"/);
  assert.match(
    await refused(a.text.replace(`    secret-key`, "secret-key")),
    /line \d+ \("secret-key \.\.\."\) is not indented/,
  );
});

Deno.test("desired: builder failures surface as BuildError", async () => {
  // Two containers mounting different things at one path: the Job builder refuses it.
  const bad = mc({
    containers: [{
      image: "app",
      command: "hostname",
      volumes: {
        a: { path: "/data", emptyDir: true },
        b: { path: "/data", emptyDir: true },
      },
    }],
  });
  await assert.rejects(
    desiredChildren(withDefaults(bad), { effectiveSize: 2, maximumSize: 4 }),
    BuildError,
  );
});

Deno.test("desired: beside a running Job, the brokers' children keep its subdomain", async () => {
  const renamed = withDefaults(mc({ network: { headlessName: "brokers" } }));
  const sizing = { effectiveSize: 2, maximumSize: 4 };
  const fresh = await desiredChildren(renamed, sizing);
  const running = await desiredChildren(renamed, sizing, { runningSubdomain: "flux" });
  const domains = (cm: typeof fresh.configMap) =>
    [...JSON.stringify(cm.data).matchAll(/%h\.([a-z0-9-]+)\.ns\.svc/g)].map((m) => m[1]);
  assert.equal(fresh.services[0].metadata?.name, "brokers");
  assert.ok(domains(fresh.configMap).every((d) => d === "brokers"));
  assert.equal(running.services[0].metadata?.name, "flux");
  assert.ok(domains(running.configMap).length > 0);
  assert.ok(domains(running.configMap).every((d) => d === "flux"));
  // The Job is built from the spec: the difference is what the running Job cannot take.
  assert.equal(running.job.spec?.template.spec?.subdomain, "brokers");
  assert.deepEqual(running.job, fresh.job);
  assert.deepEqual(await desiredChildren(renamed, sizing, { runningSubdomain: "brokers" }), fresh);
});

Deno.test("desired: the hashes are the released operator's, so an upgrade rewrites no child", async () => {
  // Recorded from the operator before the sizing became a builder argument: a child whose hash
  // changes is applied again on upgrade (diff.ts), so these change only with what is built.
  const spec = mc({
    containers: [
      { name: "app", image: "app", command: "hostname", runFlux: true },
      { name: "db", image: "db", ports: [5432] },
    ],
    gang: {},
    services: [{ name: "svc", image: "svc" }],
  });
  const hashes = async (effectiveSize: number) => {
    const d = await desiredChildren(withDefaults(spec), { effectiveSize, maximumSize: 4 });
    return Object.fromEntries([
      ...[...childrenInOrder(d).map((c) => c.object), d.job]
        .filter((c) => c !== d.podGroup) // applied as built, without a hash
        .map((
          c,
        ) => [`${c.kind}/${c.metadata?.name}`, c.metadata?.annotations?.[DESIRED_HASH_ANNOTATION]]),
      ["template", d.job.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION]],
      ["PodGroup minCount", d.podGroup?.spec?.schedulingPolicy?.gang?.minCount],
    ]);
  };
  const unchanged = {
    "Service/flux": "fd6e81a4163898ebb2b00523",
    "Service/flux-db": "2294a96bef1b07a56048465b",
    "Pod/flux-services": "f217f82991ca4dda46e52efa",
    template: "af6c64a16c2adc68662ec0c2",
  };
  assert.deepEqual(await hashes(2), {
    ...unchanged,
    "ConfigMap/flux-entrypoint": "8361c18ba6fe9c5e5dd39b18",
    "Job/flux": "dc74164832b5eccfd98edcab",
    "PodGroup minCount": 2,
  });
  assert.deepEqual(await hashes(3), {
    ...unchanged,
    "ConfigMap/flux-entrypoint": "19717e26416184c263871c8b",
    "Job/flux": "7687573c6ae8ee05bb9c9999",
    "PodGroup minCount": 2,
  });
});
