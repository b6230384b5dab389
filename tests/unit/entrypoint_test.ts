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
} from "../../controllers/minicluster/children/scripts/parts/settings.ts";
import {
  brokerToml,
  hostsAfterLead,
  tomlString,
} from "../../controllers/minicluster/children/scripts/broker-toml.ts";
import { nodeSpec } from "../../controllers/minicluster/children/scripts/wait.ts";
import { assertGolden } from "../golden.ts";
import { cases, miniCluster, UID } from "./entrypoint_cases.ts";
import { specSized } from "./fixtures.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";

const image = "ghcr.io/rse-ops/lammps:flux-sched-focal";

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
    const cm = buildEntrypointConfigMap(...specSized(deepFreeze(miniCluster(spec))));
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
    const keys = Object.keys(buildEntrypointConfigMap(mc, specSizing(mc)).data ?? {});
    assert.deepEqual(keys, entrypointItems(mc).map((item) => item.key));
    assert.ok(!keys.includes("curve.cert"));
  }
});

Deno.test("the ConfigMap is <name>-entrypoint, labelled and owned by the MiniCluster", () => {
  const cm = buildEntrypointConfigMap(...specSized(miniCluster(cases.minimal)));
  assert.equal(cm.metadata?.name, "flux-sample-entrypoint");
  assert.equal(cm.metadata?.namespace, "flux-operator");
  assert.equal(cm.metadata?.labels?.["app.kubernetes.io/managed-by"], "minicluster-operator");
  assert.equal(cm.metadata?.ownerReferences?.[0]?.uid, UID);
  assert.deepEqual(Object.keys(cm.data ?? {}), ["wait-0", "flux-view"]);
});

Deno.test("keys follow container indexes: wait for Flux, start for wrapped others", () => {
  const cm = buildEntrypointConfigMap(...specSized(miniCluster(cases["multiple-containers"])));
  assert.deepEqual(Object.keys(cm.data ?? {}), ["wait-0", "start-1", "start-3", "flux-view"]);
  const custom = buildEntrypointConfigMap(...specSized(miniCluster(cases["custom-flux-view"])));
  assert.deepEqual(Object.keys(custom.data ?? {}), ["wait-0", "my-view"]);
});

Deno.test("hostlists: own brokers up to maxSize, lead broker first, bursted clusters in order", () => {
  const hostlist = (spec: Parameters<typeof miniCluster>[0]) =>
    resolveSettings(...specSized(miniCluster(spec))).hostlist;
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
  assert.equal(quorumOf({ effectiveSize: 4, maximumSize: 4 }), undefined);
  assert.equal(quorumOf({ effectiveSize: 4, maximumSize: 8 }), 4);
  assert.equal(quorumOf({ effectiveSize: 4, maximumSize: 8 }, 2), 2);
  assert.equal(quorumOf({ effectiveSize: 4, maximumSize: 4 }, 3), 3);
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
    buildEntrypointConfigMap(...specSized(miniCluster(spec))).data!["wait-0"]
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
  const toml = brokerToml(resolveSettings(...specSized(miniCluster(cases["custom-flux-view"]))));
  assert.match(
    toml,
    /^default_connect = "tcp:\/\/%h\.flux-net\.flux-operator\.svc\.cluster\.local:%p"$/m,
  );
  assert.match(toml, /^default_bind = "tcp:\/\/eth0:%p"$/m);
  assert.match(toml, /^default_port = 8050$/m);
  assert.match(toml, /^curve_cert = "\/opt\/my flux\/config\/curve\/curve.cert"$/m);
  assert.match(toml, /^queue-policy = "easy"$/m);
  const verbatim = brokerToml(resolveSettings(...specSized(miniCluster(cases["broker-config"]))));
  assert.equal(verbatim + "\n", cases["broker-config"].flux?.brokerConfig);
  assert.equal(tomlString('a"b\\c\nd'), '"a\\"b\\\\c\\nd"');
  // TOML forbids DEL raw in a basic string; C1 controls, BOM and noncharacters go escaped too.
  assert.equal(
    tomlString("x\u007fy\u0085z\u009f\ufeff\uffff\u0001\t"),
    '"x\\u007fy\\u0085z\\u009f\\ufeff\\uffff\\u0001\\t"',
  );
});

/** A Flux hostlist expanded host by host ("a,b-[1-3],c-[0]" → a b-1 b-2 b-3 c-0). */
function expandHostlist(hostlist: string): string[] {
  const parts = hostlist.match(/[^,\[]+(\[[^\]]*\])?/g) ?? [];
  return parts.flatMap((part) => {
    const m = part.match(/^(.*)\[(.*)\]$/);
    if (!m) return [part];
    return m[2].split(",").flatMap((range) => {
      const [a, b = a] = range.split("-").map(Number);
      return Array.from({ length: b - a + 1 }, (_, i) => `${m[1]}${a + i}`);
    });
  });
}

/** The ranks as flux-core's bootstrap builds them: every hosts entry appended, duplicates kept. */
function ranksOf(toml: string): string[] {
  return [...toml.matchAll(/\{ host = "([^"]*)"/g)].flatMap((m) => expandHostlist(m[1]));
}

Deno.test("bursting: a cluster joining a lead broker has exactly the lead cluster's ranks", () => {
  // The lead cluster: flux-lead, size 4, bursting to burst-0 (3 hosts) and gke (1 host).
  const lead = resolveSettings(...specSized(miniCluster({
    size: 4,
    containers: [{ image, command: "hostname" }],
    flux: { bursting: { clusters: [{ name: "burst-0", size: 3 }, { name: "gke", size: 1 }] } },
  }, "flux-lead")));
  const leadRanks = ranksOf(brokerToml(lead));
  assert.equal(leadRanks.length, 8);
  // Its burst target (cases.bursting) lists the lead broker's address first, then the same hosts.
  const child = ranksOf(brokerToml(resolveSettings(...specSized(miniCluster(cases.bursting)))));
  assert.deepEqual(child, ["lead.example.org", ...leadRanks.slice(1)]);
  // A single-broker lead cluster: the lead broker alone, one entry.
  const single = brokerToml(resolveSettings(...specSized(miniCluster({
    containers: [{ image, command: "hostname" }],
    flux: { bursting: { leadBroker: { address: "10.0.0.1", name: "solo", size: 1 } } },
  }))));
  assert.deepEqual(ranksOf(single), ["10.0.0.1"]);
  assert.equal(hostsAfterLead("10.0.0.1,x-[1-2]", "10.0.0.1"), "x-[1-2]");
  assert.equal(hostsAfterLead("custom-[0-3]", "10.0.0.1"), "custom-[0-3]");
});

Deno.test("FLUX_RC_EXTRA names the directory that holds the view's rc1.d", async () => {
  const view = await Deno.makeTempDir({ prefix: "mc-rc-extra-" });
  try {
    await Deno.mkdir(`${view}/etc/flux/rc1.d`, { recursive: true });
    const script =
      buildEntrypointConfigMap(...specSized(miniCluster(cases.minimal))).data!["wait-0"];
    const line = script.match(/^export FLUX_RC_EXTRA=.*$/m)?.[0];
    assert.ok(line, "the wait script sets FLUX_RC_EXTRA");
    // Flux runs $dir/rc1.d/* for every dir of FLUX_RC_EXTRA (flux-core's modprobe/rc1).
    const probe = new Deno.Command("bash", {
      args: ["-c", `viewroot="$1"; ${line}; [ -d "\${FLUX_RC_EXTRA}/rc1.d" ]`, "probe", view],
    });
    assert.equal((await probe.output()).code, 0, line);
  } finally {
    await Deno.remove(view, { recursive: true });
  }
});

Deno.test("a lead broker gets its own bind and connect at its port", () => {
  const toml = brokerToml(resolveSettings(...specSized(miniCluster(cases.bursting))));
  assert.match(
    toml,
    /\{ host = "lead\.example\.org", bind = "tcp:\/\/eth0:30093", connect = "tcp:\/\/lead\.example\.org:30093" \}/,
  );
});

Deno.test("specs the scripts cannot be built from raise EntrypointSpecError", () => {
  assert.throws(
    () =>
      buildEntrypointConfigMap(
        ...specSized(miniCluster({ containers: [{}], flux: { environment: { "BAD-NAME": "x" } } })),
      ),
    (e) => e instanceof EntrypointSpecError && /BAD-NAME/.test(e.message),
  );
  assert.throws(
    () =>
      buildEntrypointConfigMap(
        ...specSized(miniCluster({ containers: [{}], flux: { container: { name: "wait-0" } } })),
      ),
    (e) => e instanceof EntrypointSpecError && /collides/.test(e.message),
  );
});

Deno.test("the build is deterministic", () => {
  for (const spec of Object.values(cases)) {
    assert.deepEqual(
      buildEntrypointConfigMap(...specSized(miniCluster(spec))),
      buildEntrypointConfigMap(...specSized(miniCluster(spec))),
    );
  }
});
