import assert from "node:assert/strict";
import {
  inClusterConnection,
  isInCluster,
  loadKubeconfig,
  mergeKubeconfigs,
  parseKubeconfig,
  resolveKubeconfig,
  splitKubeconfigList,
} from "../../runtime/config/kubeconfig.ts";
import { KubeconfigError } from "../../runtime/config/kubeconfig_error.ts";

const b64 = (s: string) => btoa(s);

const INLINE = `
apiVersion: v1
kind: Config
current-context: admin@local
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: ${b64("CA PEM\n")}
- name: other
  cluster:
    server: https://10.0.0.1
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    client-certificate-data: ${b64("CERT PEM\n")}
    client-key-data: ${b64("KEY PEM\n")}
- name: bot
  user:
    token: s3cr3t
- name: rotating
  user:
    tokenFile: tokens/bot
- name: plugin
  user:
    exec:
      command: aws
contexts:
- name: admin@local
  context:
    cluster: local
    user: admin
    namespace: work
- name: bot@other
  context:
    cluster: other
    user: bot
- name: rotating@local
  context:
    cluster: local
    user: rotating
- name: plugin@local
  context:
    cluster: local
    user: plugin
- name: broken
  context:
    cluster: nowhere
    user: admin
`;

Deno.test("kubeconfig: current context with inline base64 CA and client certificate", async () => {
  const conn = await resolveKubeconfig(await parseKubeconfig(INLINE));
  assert.deepEqual(conn, {
    server: "https://127.0.0.1:6443",
    namespace: "work",
    context: "admin@local",
    caCerts: ["CA PEM\n"],
    clientCert: "CERT PEM\n",
    clientKey: "KEY PEM\n",
  });
});

Deno.test("kubeconfig: an explicit context, a bearer token and the default namespace", async () => {
  const conn = await resolveKubeconfig(await parseKubeconfig(INLINE), { context: "bot@other" });
  assert.equal(conn.server, "https://10.0.0.1");
  assert.equal(conn.token, "s3cr3t");
  assert.equal(conn.namespace, "default");
  assert.equal(conn.insecureSkipTLSVerify, true);
  assert.equal(conn.clientCert, undefined);
});

Deno.test("kubeconfig: tokenFile is resolved relative to the kubeconfig's directory", async () => {
  const conn = await resolveKubeconfig(await parseKubeconfig(INLINE), {
    context: "rotating@local",
    baseDir: "/etc/kube",
  });
  assert.equal(conn.tokenFile, "/etc/kube/tokens/bot");
  assert.equal(conn.token, undefined);
});

Deno.test("kubeconfig: unknown contexts, dangling references and bad plugins are refused", async () => {
  const kc = await parseKubeconfig(INLINE);
  await assert.rejects(resolveKubeconfig(kc, { context: "nope" }), KubeconfigError);
  await assert.rejects(resolveKubeconfig(kc, { context: "broken" }), /cluster "nowhere"/);
  await assert.rejects(
    resolveKubeconfig(kc, { context: "plugin@local" }),
    /user "plugin": exec: apiVersion \(none\) is not supported/,
  );
  await assert.rejects(resolveKubeconfig({}), /current-context/);
  await assert.rejects(() => parseKubeconfig("clusters: 3"), /must be a list/);
  await assert.rejects(() => parseKubeconfig("- a"), /mapping/);
  assert.deepEqual(await parseKubeconfig(""), {});
});

Deno.test("kubeconfig: tls-server-name and proxy-url are read; a proxy scheme client-go lacks is refused", async () => {
  const kc = (cluster: Record<string, string>) => ({
    "current-context": "x",
    clusters: [{ name: "c", cluster: { server: "https://10.0.0.1:6443", ...cluster } }],
    contexts: [{ name: "x", context: { cluster: "c" } }],
  });
  const named = await resolveKubeconfig(kc({ "tls-server-name": "api.internal" }));
  assert.equal(named.tlsServerName, "api.internal");
  for (const url of ["http://proxy:3128", "https://u:p@proxy", "socks5://127.0.0.1:1080"]) {
    assert.equal((await resolveKubeconfig(kc({ "proxy-url": url }))).proxyUrl, url);
  }
  await assert.rejects(
    resolveKubeconfig(kc({ "proxy-url": "ftp://proxy" })),
    /cluster "c": proxy-url scheme ftp: is not http, https or socks5/,
  );
  await assert.rejects(
    resolveKubeconfig(kc({ "proxy-url": "proxy:3128:x" })),
    /cluster "c": proxy-url scheme proxy: is not http, https or socks5/,
  );
  await assert.rejects(resolveKubeconfig(kc({ "proxy-url": "::" })), /proxy-url "::" is not a URL/);
});

Deno.test("kubeconfig: a user's impersonation is read; groups, uid or extra without a user are refused", async () => {
  const kc = (user: Record<string, unknown>) => ({
    "current-context": "x",
    clusters: [{ name: "c", cluster: { server: "https://10.0.0.1:6443" } }],
    users: [{ name: "u", user: { token: "t", ...user } }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
  });
  const conn = await resolveKubeconfig(
    await parseKubeconfig(`
current-context: x
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]
users:
- name: u
  user:
    token: t
    as: jane
    as-uid: "42"
    as-groups: [devs, ops]
    as-user-extra: {reason: [testing]}
contexts: [{name: x, context: {cluster: c, user: u}}]
`),
  );
  assert.deepEqual(conn.impersonate, {
    user: "jane",
    uid: "42",
    groups: ["devs", "ops"],
    extra: { reason: ["testing"] },
  });
  assert.deepEqual((await resolveKubeconfig(kc({ as: "jane" }))).impersonate, {
    user: "jane",
    uid: undefined,
    groups: [],
    extra: {},
  });
  assert.equal((await resolveKubeconfig(kc({}))).impersonate, undefined);
  for (
    const user of [{ "as-groups": ["devs"] }, { "as-uid": "42" }, { "as-user-extra": { a: ["b"] } }]
  ) {
    await assert.rejects(
      resolveKubeconfig(kc(user)),
      /user "u": as-groups, as-uid and as-user-extra need a user to act as \(as\)/,
    );
  }
  await assert.rejects(
    resolveKubeconfig(kc({ as: "jane", "as-groups": "devs" })),
    /as-groups must be a list of strings/,
  );
  await assert.rejects(
    resolveKubeconfig(kc({ as: "jane", "as-user-extra": { a: "b" } })),
    /as-user-extra must map names to lists of strings/,
  );
});

Deno.test("kubeconfig: a JSON kubeconfig reads the same as its YAML form", async () => {
  const fromYaml = await parseKubeconfig(INLINE);
  assert.deepEqual(await parseKubeconfig(JSON.stringify(fromYaml, null, 2)), fromYaml);
  // A YAML flow mapping starts like JSON but is not JSON: the YAML parser still reads it.
  assert.deepEqual(await parseKubeconfig("{current-context: a}"), { "current-context": "a" });
  await assert.rejects(() => parseKubeconfig("{ not: [valid"), /invalid YAML/);
});

Deno.test("kubeconfig: certificate files are read relative to the kubeconfig file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/pki`);
    await Deno.writeTextFile(`${dir}/pki/ca.crt`, "CA FROM FILE");
    await Deno.writeTextFile(`${dir}/pki/admin.crt`, "CERT FROM FILE");
    await Deno.writeTextFile(`${dir}/pki/admin.key`, "KEY FROM FILE");
    await Deno.writeTextFile(
      `${dir}/kubeconfig`,
      `
current-context: c
clusters: [{name: k, cluster: {server: "https://127.0.0.1:1", certificate-authority: pki/ca.crt}}]
users: [{name: u, user: {client-certificate: pki/admin.crt, client-key: ${dir}/pki/admin.key}}]
contexts: [{name: c, context: {cluster: k, user: u, namespace: ns1}}]
`,
    );
    const conn = await loadKubeconfig(`${dir}/kubeconfig`);
    assert.deepEqual(conn.caCerts, ["CA FROM FILE"]);
    assert.equal(conn.clientCert, "CERT FROM FILE");
    assert.equal(conn.clientKey, "KEY FROM FILE");
    assert.equal(conn.namespace, "ns1");

    // A $KUBECONFIG-style list skips missing files; a single missing file is an error.
    const listed = await loadKubeconfig([`${dir}/missing`, `${dir}/kubeconfig`]);
    assert.equal(listed.server, "https://127.0.0.1:1");
    await assert.rejects(loadKubeconfig(`${dir}/missing`), /cannot read kubeconfig/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("kubeconfig: one path names exactly one file, a colon included", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const good = `${dir}/kubeconfig`;
    await Deno.writeTextFile(
      good,
      `current-context: c
clusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: k}}]
`,
    );
    // Once a wrong path was split at ":" like $KUBECONFIG and its missing parts skipped, ending
    // in "no current-context"; deno task passed such a path verbatim.
    for (const wrong of ["${KUBECONFIG:-.cluster/kubeconfig}", `${dir}/missing:${good}`]) {
      await assert.rejects(
        loadKubeconfig(wrong),
        (e: Error) => {
          assert.ok(e instanceof KubeconfigError);
          assert.match(e.message, /^cannot read kubeconfig /);
          assert.ok(e.message.includes(wrong), e.message);
          return true;
        },
      );
    }
    // A file whose name has a colon is read as that one file.
    const colon = `${dir}/a:b`;
    await Deno.copyFile(good, colon);
    assert.equal((await loadKubeconfig(colon)).server, "https://127.0.0.1:1");
    // A directory or an unreadable file is an error naming it.
    await assert.rejects(loadKubeconfig(dir), new RegExp(`cannot read kubeconfig ${dir}:`));
    // A readable file without a current-context says which file it was.
    await Deno.writeTextFile(`${dir}/empty`, "");
    await assert.rejects(
      loadKubeconfig(`${dir}/empty`),
      new RegExp(`kubeconfig ${dir}/empty: no context given and the kubeconfig has no current`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("kubeconfig: a $KUBECONFIG list skips missing files, but not all of them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    assert.deepEqual(splitKubeconfigList(`${dir}/a::${dir}/b:`), [`${dir}/a`, `${dir}/b`]);
    await Deno.writeTextFile(
      `${dir}/b`,
      `current-context: c
clusters: [{name: k, cluster: {server: "https://127.0.0.1:2"}}]
contexts: [{name: c, context: {cluster: k}}]
`,
    );
    const conn = await loadKubeconfig(splitKubeconfigList(`${dir}/a:${dir}/b`));
    assert.equal(conn.server, "https://127.0.0.1:2");
    await assert.rejects(
      loadKubeconfig(splitKubeconfigList(`${dir}/a:${dir}/c`)),
      new RegExp(`^KubeconfigError: no kubeconfig found: none of ${dir}/a, ${dir}/c exists$`),
    );
    await assert.rejects(loadKubeconfig([]), /no kubeconfig path given/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("kubeconfig: merging keeps the first definition of each name", () => {
  const merged = mergeKubeconfigs([
    { "current-context": "a", clusters: [{ name: "x", cluster: { server: "https://first" } }] },
    {
      "current-context": "b",
      clusters: [
        { name: "x", cluster: { server: "https://second" } },
        { name: "y", cluster: { server: "https://y" } },
      ],
    },
  ]);
  assert.equal(merged["current-context"], "a");
  assert.deepEqual(merged.clusters?.map((c) => c.cluster.server), ["https://first", "https://y"]);
});

Deno.test("kubeconfig: in-cluster reads the ServiceAccount mount and service env", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/token`, "tok\n");
    await Deno.writeTextFile(`${dir}/ca.crt`, "SA CA");
    await Deno.writeTextFile(`${dir}/namespace`, "operators\n");
    const env = new Map([["KUBERNETES_SERVICE_HOST", "fd00::1"], [
      "KUBERNETES_SERVICE_PORT",
      "443",
    ]]);
    assert.equal(isInCluster(dir, env), true);
    assert.equal(isInCluster(dir, new Map()), false);
    const conn = await inClusterConnection(dir, env);
    assert.deepEqual(conn, {
      server: "https://[fd00::1]:443",
      tokenFile: `${dir}/token`,
      namespace: "operators",
      caCerts: ["SA CA"],
    });
    await assert.rejects(inClusterConnection(dir, new Map()), /not running in a cluster/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
