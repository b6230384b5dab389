import assert from "node:assert/strict";
import {
  buildEntrypointConfigMap,
  entrypointItems,
  EntrypointSpecError,
} from "../../controllers/minicluster/children/entrypoint.ts";
import {
  quorumOf,
  rangeOf,
  resolveSettings,
} from "../../controllers/minicluster/children/scripts/settings.ts";
import {
  brokerToml,
  tomlString,
} from "../../controllers/minicluster/children/scripts/broker-toml.ts";
import { nodeSpec } from "../../controllers/minicluster/children/scripts/wait.ts";
import { assertGolden } from "../golden.ts";
import { cases, miniCluster, UID } from "./entrypoint_cases.ts";

/** Freezes an object graph, so a builder that writes to its input throws. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

for (const [name, spec] of Object.entries(cases)) {
  Deno.test(`entrypoint ConfigMap golden: ${name}`, async () => {
    const cm = buildEntrypointConfigMap(deepFreeze(miniCluster(spec)));
    const { data, ...rest } = cm;
    // The object with its keys, then every script as a file of its own (reviewable as shell).
    await assertGolden(`entrypoint/${name}/configmap.yaml`, {
      ...rest,
      dataKeys: Object.keys(data ?? {}),
    });
    for (const [key, script] of Object.entries(data ?? {})) {
      await assertGolden(`entrypoint/${name}/${key}.sh`, script);
    }
  });
}

Deno.test("the ConfigMap has exactly the keys the Job projects, and no certificate", () => {
  for (const spec of Object.values(cases)) {
    const mc = miniCluster(spec);
    const keys = Object.keys(buildEntrypointConfigMap(mc).data ?? {});
    assert.deepEqual(keys, entrypointItems(mc).map((item) => item.key));
    assert.ok(!keys.includes("curve.cert"));
  }
});

Deno.test("the ConfigMap is <name>-entrypoint, labelled and owned by the MiniCluster", () => {
  const cm = buildEntrypointConfigMap(miniCluster(cases.minimal));
  assert.equal(cm.metadata?.name, "flux-sample-entrypoint");
  assert.equal(cm.metadata?.namespace, "flux-operator");
  assert.equal(cm.metadata?.labels?.["app.kubernetes.io/managed-by"], "minicluster-operator");
  assert.equal(cm.metadata?.ownerReferences?.[0]?.uid, UID);
  assert.deepEqual(Object.keys(cm.data ?? {}), ["wait-0", "flux-view"]);
});

Deno.test("keys follow container indexes: wait for Flux, start for wrapped others", () => {
  const cm = buildEntrypointConfigMap(miniCluster(cases["multiple-containers"]));
  assert.deepEqual(Object.keys(cm.data ?? {}), ["wait-0", "start-1", "start-3", "flux-view"]);
  const custom = buildEntrypointConfigMap(miniCluster(cases["custom-flux-view"]));
  assert.deepEqual(Object.keys(custom.data ?? {}), ["wait-0", "my-view"]);
});

Deno.test("hostlists: own brokers up to maxSize, lead broker first, bursted clusters in order", () => {
  const hostlist = (spec: Parameters<typeof miniCluster>[0]) =>
    resolveSettings(miniCluster(spec)).hostlist;
  assert.equal(hostlist(cases.minimal), "flux-sample-[0-3]");
  assert.equal(hostlist({ containers: [{}] }), "flux-sample-[0]");
  assert.equal(hostlist(cases["submit-options"]), "flux-sample-[0-7]");
  assert.equal(hostlist(cases.bursting), "lead.example.org,flux-lead-[1-3],burst-0-[0-2],gke-[0]");
  assert.equal(hostlist(cases["bursting-hostlist"]), "flux-sample-[0-1],remote-[0-3]");
  assert.equal(
    hostlist({
      containers: [{}],
      flux: { bursting: { leadBroker: { address: "a", name: "b", size: 1 } } },
    }),
    "a",
  );
});

Deno.test("quorum: minSize, else size when the cluster may grow, else Flux's default", () => {
  assert.equal(quorumOf(4, 4), undefined);
  assert.equal(quorumOf(4, 8), 4);
  assert.equal(quorumOf(4, 8, 2), 2);
  assert.equal(quorumOf(4, 4, 3), 3);
  assert.equal(rangeOf(1, 0), "0");
  assert.equal(rangeOf(4, 1), "1-4");
});

Deno.test("node spec: -N only when tasks cover the nodes, -N alone when tasks is 0", () => {
  assert.deepEqual(nodeSpec(4, 8), ["-N", "4", "-n8"]);
  assert.deepEqual(nodeSpec(4, 4), ["-N", "4", "-n4"]);
  assert.deepEqual(nodeSpec(4, 2), ["-n2"]);
  assert.deepEqual(nodeSpec(4, 0), ["-N", "4"]);
});

Deno.test("connect timeout: 5s only inside a given spec.flux, none without it or with ''", () => {
  const options = (spec: Parameters<typeof miniCluster>[0]) =>
    buildEntrypointConfigMap(miniCluster(spec)).data!["wait-0"]
      .match(/-Stbon\.connect_timeout=[^' "\n]*/g) ?? [];
  const containers = [{ image: "app", command: "hostname" }];
  // The Go operator's CRD defaults connectTimeout inside spec.flux only: without it the broker
  // keeps Flux's own timeout (30 s).
  assert.deepEqual(options({ containers }), []);
  assert.deepEqual(options({ containers, flux: {} }), ["-Stbon.connect_timeout=5s"]);
  assert.deepEqual(options({ containers, flux: { connectTimeout: "" } }), []);
  assert.deepEqual(options({ containers, flux: { connectTimeout: "1m" } }), [
    "-Stbon.connect_timeout=1m",
  ]);
});

Deno.test("broker.toml: connect through the headless Service, brokerConfig verbatim", () => {
  const toml = brokerToml(resolveSettings(miniCluster(cases["custom-flux-view"])));
  assert.match(
    toml,
    /^default_connect = "tcp:\/\/%h\.flux-net\.flux-operator\.svc\.cluster\.local:%p"$/m,
  );
  assert.match(toml, /^default_bind = "tcp:\/\/eth0:%p"$/m);
  assert.match(toml, /^default_port = 8050$/m);
  assert.match(toml, /^curve_cert = "\/opt\/my flux\/config\/curve\/curve.cert"$/m);
  assert.match(toml, /^queue-policy = "easy"$/m);
  const verbatim = brokerToml(resolveSettings(miniCluster(cases["broker-config"])));
  assert.equal(verbatim + "\n", cases["broker-config"].flux?.brokerConfig);
  assert.equal(tomlString('a"b\\c\nd'), '"a\\"b\\\\c\\nd"');
});

Deno.test("a lead broker gets its own bind and connect at its port", () => {
  const toml = brokerToml(resolveSettings(miniCluster(cases.bursting)));
  assert.match(
    toml,
    /\{ host = "lead\.example\.org", bind = "tcp:\/\/eth0:30093", connect = "tcp:\/\/lead\.example\.org:30093" \}/,
  );
});

Deno.test("specs the scripts cannot be built from raise EntrypointSpecError", () => {
  assert.throws(
    () =>
      buildEntrypointConfigMap(
        miniCluster({ containers: [{}], flux: { environment: { "BAD-NAME": "x" } } }),
      ),
    (e) => e instanceof EntrypointSpecError && /BAD-NAME/.test(e.message),
  );
  assert.throws(
    () =>
      buildEntrypointConfigMap(
        miniCluster({ containers: [{}], flux: { container: { name: "wait-0" } } }),
      ),
    (e) => e instanceof EntrypointSpecError && /collides/.test(e.message),
  );
});

Deno.test("the build is deterministic", () => {
  for (const spec of Object.values(cases)) {
    assert.deepEqual(
      buildEntrypointConfigMap(miniCluster(spec)),
      buildEntrypointConfigMap(miniCluster(spec)),
    );
  }
});
