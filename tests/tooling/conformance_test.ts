/**
 * The pure parts of the differential conformance suite (hack/conformance/): normalisation, pairing
 * and diffing of children, the allow-list's classification, its docs/differences.md and
 * migration-guide anchors (checked here too, so the docs cannot drift between runs of the suite), and the
 * recording `flux` stand-in the scripts run against.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  compareChildren,
  diffValues,
  NAMESPACE,
  normalise,
  normaliseCertificate,
  pairChildren,
} from "../../hack/conformance/compare.ts";
import { ALLOW_LIST, type ManifestContext } from "../../hack/conformance/allow_list.ts";
import { classify, differencesLine, missingAnchors } from "../../hack/conformance/report.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("normalise: what the cluster or chance decides is gone, lists of maps keyed", () => {
  const job = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: "mc",
      namespace: "cf-go-3",
      uid: "u",
      resourceVersion: "7",
      creationTimestamp: "t",
      generation: 1,
      managedFields: [{}],
      ownerReferences: [{ kind: "MiniCluster", name: "mc", uid: "owner" }],
      labels: { "controller-uid": "abc" },
    },
    spec: {
      template: {
        spec: {
          shareProcessNamespace: false,
          containers: [{
            name: "mc",
            securityContext: {},
            lifecycle: {},
            env: [{ name: "B", value: "2" }, { name: "A", value: "1" }],
            volumeMounts: [{ name: "x", mountPath: "/x" }],
          }],
          volumes: [{ name: "x", emptyDir: {} }, { name: "kube-api-access-ab1cd", projected: {} }],
          subdomain: "mc",
        },
      },
      selector: { matchLabels: { "batch.kubernetes.io/controller-uid": "abc" } },
      connect: "tcp://%h.mc.cf-go-3.svc.cluster.local:%p cf-go-30",
    },
    status: { active: 1 },
  };
  // deno-lint-ignore no-explicit-any
  const n = normalise(job, "cf-go-3") as Record<string, any>;
  assert.deepEqual(n.metadata, {
    name: "mc",
    namespace: NAMESPACE,
    ownerReferences: [{ kind: "MiniCluster", name: "mc" }],
    labels: { "controller-uid": "<uid>" },
  });
  assert.equal(n.status, undefined);
  const pod = n.spec.template.spec;
  assert.equal(pod.shareProcessNamespace, undefined);
  assert.equal(pod.containers[0].securityContext, undefined);
  assert.deepEqual(pod.volumes[0], { name: "x", emptyDir: {} }, "emptyDir: {} is a volume");
  assert.equal(pod.volumes[1].name, "kube-api-access-<random>");
  // Only whole labels: cf-go-30 is another namespace.
  assert.equal(n.spec.connect, `tcp://%h.mc.${NAMESPACE}.svc.cluster.local:%p cf-go-30`);
  assert.equal(n.spec.selector.matchLabels["batch.kubernetes.io/controller-uid"], "<uid>");
});

Deno.test("normalise: scripts become placeholders, certificates lose key material", () => {
  const cert = [
    "#   ****  Generated on 2023-04-26 22:54:42 by CZMQ  ****",
    "metadata",
    '    name = "flux-cert-generator"',
    "curve",
    '    public-key = "abc"',
    '    secret-key = "def"',
  ].join("\n");
  const cm = normalise({
    kind: "ConfigMap",
    metadata: { name: "mc-entrypoint" },
    data: { "wait-0": "#!/bin/sh\necho", "curve.cert": cert, plain: "x" },
  }, "ns") as { data: Record<string, string> };
  assert.equal(cm.data["wait-0"], "<script>");
  assert.equal(cm.data.plain, "x");
  assert.equal(
    cm.data["curve.cert"],
    'metadata\n    name = "flux-cert-generator"\ncurve\n    public-key = "<public-key>"\n' +
      '    secret-key = "<secret-key>"',
  );
  const secret = normalise({
    kind: "Secret",
    metadata: { name: "mc-curve-cert" },
    data: { "curve.cert": btoa(cert), other: btoa("s3cret") },
  }, "ns") as { data: Record<string, string> };
  assert.equal(secret.data["curve.cert"], normaliseCertificate(cert));
  assert.equal(secret.data.other, "<secret data>");
});

Deno.test("diffValues: leaves, named items by name, ports by port, container order", () => {
  assert.deepEqual(diffValues({ a: 1, b: { c: 2 } }, { a: 1, b: { c: 3 }, d: 4 }), [
    { path: "b.c", go: 2, ours: 3 },
    { path: "d", go: undefined, ours: 4 },
  ]);
  assert.deepEqual(
    diffValues(
      { env: [{ name: "A", value: "1" }, { name: "B", value: "2" }] },
      { env: [{ name: "B", value: "2" }, { name: "A", value: "x" }] },
    ),
    [{ path: "env[name=A].value", go: "1", ours: "x" }],
  );
  // Go's ports have no names, ours do: matched by port.
  assert.deepEqual(
    diffValues({ ports: [{ port: 80 }] }, { ports: [{ name: "port-80", port: 80 }] }),
    [{ path: "ports[port=80].name", go: undefined, ours: "port-80" }],
  );
  assert.deepEqual(
    diffValues({ containers: [{ name: "a" }, { name: "b" }] }, {
      containers: [{ name: "b" }, { name: "a" }],
    }),
    [{ path: "containers(order)", go: ["name=a", "name=b"], ours: ["name=b", "name=a"] }],
  );
  assert.deepEqual(diffValues({ command: ["a", "b"] }, { command: ["a", "c"] }), [
    { path: "command", go: ["a", "b"], ours: ["a", "c"] },
  ]);
});

Deno.test("pairChildren: Go's <container> Service pairs with our <name>-<container>", () => {
  const svc = (name: string) => ({ kind: "Service", metadata: { name } });
  const { pairs, goOnly, oursOnly } = pairChildren(
    [svc("mc"), svc("db"), { kind: "ConfigMap", metadata: { name: "mc-entrypoint" } }],
    [svc("mc"), svc("mc-db"), { kind: "Secret", metadata: { name: "mc-curve-cert" } }],
    "mc",
  );
  assert.deepEqual(
    pairs.map(([g, o]) => [g.metadata, o.metadata].map((m) => (m as { name: string }).name)),
    [["mc", "mc"], ["db", "mc-db"]],
  );
  assert.deepEqual(goOnly.map((o) => o.kind), ["ConfigMap"]);
  assert.deepEqual(oursOnly.map((o) => o.kind), ["Secret"]);
});

function context(spec: Record<string, unknown>, extra: Partial<ManifestContext> = {}) {
  return new Map<string, ManifestContext>([["valid/x", {
    spec,
    name: "mc",
    goChildren: new Set(["Job/mc"]),
    oursChildren: new Set(["Job/mc"]),
    oursConditions: [],
    ...extra,
  }]]);
}

Deno.test("classify: documented differences are allowed, anything else is not", () => {
  const ctx = context({ containers: [{ volumes: { out: { emptyDir: true, path: "/out" } } }] });
  const children = compareChildren(
    { manifest: "valid/x", name: "mc", goNamespace: "g", oursNamespace: "o" },
    [
      { kind: "Service", metadata: { name: "mc" }, spec: { selector: { "job-name": "mc" } } },
      { kind: "ConfigMap", metadata: { name: "mc-entrypoint" }, data: { a: "1" } },
    ],
    [
      {
        kind: "Service",
        metadata: { name: "mc", labels: { "flux-framework.org/minicluster": "mc" } },
        spec: { selector: { "flux-framework.org/minicluster": "mc" } },
      },
      { kind: "ConfigMap", metadata: { name: "mc-entrypoint" }, data: { a: "2" } },
    ],
  );
  const classified = classify(children, ctx);
  const byPath = Object.fromEntries(classified.map((d) => [`${d.object} ${d.path}`, d.entry]));
  assert.deepEqual(byPath, {
    "Service/mc metadata.labels": "labels",
    "Service/mc spec.selector.flux-framework.org/minicluster": "service-selectors",
    "Service/mc spec.selector.job-name": "service-selectors",
    // A change in what a ConfigMap holds is documented nowhere: a failure.
    "ConfigMap/mc-entrypoint data.a": undefined,
  });
  // The emptyDir path: Go's /dev/shm, ours the volume's path; any other path is not allowed.
  const mount = (ours: string) => ({
    manifest: "valid/x",
    kind: "field" as const,
    object: "Job/mc",
    path: "spec.template.spec.containers[name=mc].volumeMounts[name=out].mountPath",
    go: "/dev/shm",
    ours,
  });
  assert.equal(classify([mount("/out")], ctx)[0].entry, "empty-dir-path");
  assert.equal(classify([mount("/elsewhere")], ctx)[0].entry, undefined);
  // FLUX_RC_EXTRA: only Go's value one level deeper than ours.
  const rc = (go: string, ours: string) => ({
    manifest: "valid/x",
    kind: "behaviour" as const,
    object: "pod mc-0",
    path: "containers.mc.brokerEnvironment",
    go: [`FLUX_RC_EXTRA=${go}`],
    ours: [`FLUX_RC_EXTRA=${ours}`],
  });
  assert.equal(classify([rc("/v/etc/flux/rc1.d", "/v/etc/flux")], ctx)[0].entry, "flux-rc-extra");
  assert.equal(classify([rc("/v/etc/flux", "/v/other")], ctx)[0].entry, undefined);
  // The resource set: ours encodes the pod's cores where Go encoded the node's; nothing else.
  const start = ["start", "-o", "--config", "/c"];
  const calls = (go: string[][], ours: string[][]) => ({
    manifest: "valid/x",
    kind: "behaviour" as const,
    object: "pod mc-0",
    path: "containers.mc.flux",
    go,
    ours,
  });
  const goR = ["R", "encode", "--hosts=mc-[0-1]", "--local"];
  const probe = [
    ["R", "encode", "--local"],
    ["R", "decode", "--count=gpu"],
    ["R", "decode", "--count=core"],
  ];
  const oursR = (...args: string[]) => ["R", "encode", "--hosts=mc-[0-1]", ...args];
  const cores = (go: string[][], ours: string[][]) => classify([calls(go, ours)], ctx)[0].entry;
  assert.equal(cores([goR, start], [...probe, oursR("--cores=0-1"), start]), "pod-cores");
  assert.equal(
    cores([goR, start], [...probe, oursR("--cores=0", "--gpus=0-1"), start]),
    "pod-cores",
  );
  assert.equal(cores([goR, start], [...probe, oursR("--cores=0-1"), [...start, "x"]]), undefined);
  assert.equal(cores([goR, start], [oursR("--cores=0-1"), start]), undefined);
  assert.equal(cores([goR, start], [...probe, oursR("--cores=0-1", "--local"), start]), undefined);
  // Without the probe of the cores hwloc finds, it is not the resource set ours writes.
  assert.equal(cores([goR, start], [...probe.slice(0, 2), oursR("--cores=0-1"), start]), undefined);
});

Deno.test("every allow-list entry points at docs/differences.md and migration-guide text that exists", async () => {
  const differences = await Deno.readTextFile(join(ROOT, "docs", "differences.md"));
  const anchors = {
    differences,
    guide: await Deno.readTextFile(join(ROOT, "docs", "migrating-from-go.md")),
  };
  assert.ok(differences.startsWith("# How it differs from the Go Flux Operator"));
  assert.deepEqual(missingAnchors(anchors), []);
  const ids = ALLOW_LIST.map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length, "entry ids are unique");
  // differencesLine finds wrapped text on the line where it starts.
  const line = differencesLine(anchors, "**Secrets stay secret.**")!;
  assert.match(differences.split("\n")[line - 1], /\*\*Secrets stay secret\.\*\*/);
  assert.equal(differencesLine(anchors, "not in the list at all"), undefined);
});

Deno.test("the recording flux stand-in: calls, the broker's socket, its initial program", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mc-flux-stub-" });
  try {
    const record = join(dir, "calls");
    const socket = join(dir, "run", "local");
    const stub = join(ROOT, "hack", "conformance", "flux.sh");
    // A PATH where `flux` is the stand-in, so the initial program's own flux calls are recorded.
    await Deno.mkdir(join(dir, "bin"));
    await Deno.symlink(stub, join(dir, "bin", "flux"));
    const out = await new Deno.Command("bash", {
      args: [
        "-c",
        `flux start -o --config /cfg "-Slocal-uri=local://${socket}" -Sa=b ` +
        `flux submit -N 2 --quiet --watch hostname; echo "exit $?"; flux R encode --hosts=h-[0-1] --local`,
      ],
      env: { PATH: `${join(dir, "bin")}:/usr/bin:/bin`, MC_RECORD: record, FLUX_RC_EXTRA: "/v" },
      stdout: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.match(stdout, /^exit 0$/m);
    assert.match(stdout, /"nodelist": \["h-\[0-1\]"\]/);
    const calls = (await Deno.readTextFile(record)).split("\n").filter((l) => l)
      .map((l) => l.split("\0").slice(0, -1));
    assert.deepEqual(calls.map((c) => c.slice(0, 2)), [
      ["start", "-o"],
      ["@env", "FLUX_RC_EXTRA=/v"],
      ["submit", "-N"],
      ["R", "encode"],
    ]);
    await Deno.stat(socket); // created for the sidecars that wait for it
    // The initial program's exit code is flux start's.
    const failing = await new Deno.Command("bash", {
      args: ["-c", "flux start -o --config /cfg false"],
      env: { PATH: `${join(dir, "bin")}:/usr/bin:/bin`, MC_RECORD: record },
    }).output();
    assert.equal(failing.code, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
