// Exec credential plugins (runtime/exec_credentials.ts): the protocol with a stand-in runner, and
// a real plugin program (a shell script) run through a kubeconfig.

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type ExecConfig,
  execInfo,
  ExecTokenSource,
  parseExecCredential,
  type RunPlugin,
} from "../../runtime/exec_credentials.ts";
import { credentialsOf } from "../../runtime/credentials.ts";
import { KubeconfigError, loadKubeconfig } from "../../runtime/kubeconfig.ts";

const V1 = "client.authentication.k8s.io/v1";

const config: ExecConfig = {
  apiVersion: V1,
  command: "plugin",
  args: [],
  env: {},
  interactiveMode: "IfAvailable",
  user: "u",
};

const credential = (status: Record<string, unknown>) =>
  JSON.stringify({ apiVersion: V1, kind: "ExecCredential", status });

/** A runner that hands out tokens t1, t2, ... and counts its runs. */
function counting(expiresInMs?: number, now = () => 0) {
  let runs = 0;
  const run: RunPlugin = () => {
    runs++;
    const expirationTimestamp = expiresInMs === undefined
      ? undefined
      : new Date(now() + expiresInMs).toISOString();
    return Promise.resolve({
      code: 0,
      stdout: credential({ token: `t${runs}`, expirationTimestamp }),
      stderr: "",
    });
  };
  return { run, runs: () => runs };
}

Deno.test("exec: a token is cached until shortly before it expires, then the plugin runs again", async () => {
  let now = 1_000_000;
  const plugin = counting(60_000, () => now);
  const source = new ExecTokenSource(config, plugin.run, () => now);
  assert.equal(await source.token(), "t1");
  now += 45_000;
  assert.equal(await source.token(), "t1");
  now += 10_000; // within the margin before expiry
  assert.equal(await source.token(), "t2");
  assert.equal(plugin.runs(), 2);
});

Deno.test("exec: concurrent callers share one run; a 401 (invalidate) runs it again", async () => {
  const plugin = counting();
  const source = new ExecTokenSource(config, plugin.run);
  const tokens = await Promise.all([source.token(), source.token(), source.token()]);
  assert.deepEqual(tokens, ["t1", "t1", "t1"]);
  assert.equal(await source.token(), "t1", "no expiry: valid until refused");
  source.invalidate();
  assert.equal(await source.token(), "t2");
  assert.equal(plugin.runs(), 2);
});

Deno.test("exec: failures name the plugin and carry its stderr", async () => {
  const failing = new ExecTokenSource(
    config,
    () => Promise.resolve({ code: 3, stdout: "", stderr: "  token expired, run aws sso login\n" }),
  );
  await assert.rejects(
    failing.token(),
    /exec plugin plugin \(user "u"\) exited with 3: token expired, run aws sso login$/,
  );
  assert.throws(
    () => new ExecTokenSource({ ...config, interactiveMode: "Always" }),
    /needs an interactive terminal/,
  );
  assert.throws(() => parseExecCredential(config, "not json"), /not JSON/);
  assert.throws(
    () => parseExecCredential(config, credential({ clientCertificateData: "PEM" })),
    /returned a client certificate/,
  );
  assert.throws(
    () =>
      parseExecCredential(
        config,
        JSON.stringify({
          apiVersion: "client.authentication.k8s.io/v1beta1",
          kind: "ExecCredential",
        }),
      ),
    /the kubeconfig asks for client.authentication.k8s.io\/v1/,
  );
  assert.throws(
    () => parseExecCredential(config, credential({ token: "x", expirationTimestamp: "soon" })),
    /is not a time/,
  );
  const info = JSON.parse(execInfo({ ...config, cluster: { server: "https://k" } }));
  assert.deepEqual(info, {
    apiVersion: V1,
    kind: "ExecCredential",
    spec: { interactive: false, cluster: { server: "https://k" } },
  });
});

Deno.test("exec: a real plugin program, found relative to the kubeconfig, with its args and env", async () => {
  const dir = await Deno.makeTempDir({ prefix: "exec-plugin-" });
  try {
    // Prints a token made of its argument and an env value, records what it was given.
    await Deno.mkdir(join(dir, "bin"));
    const plugin = join(dir, "bin", "plugin.sh");
    await Deno.writeTextFile(
      plugin,
      [
        "#!/bin/sh",
        `echo run >> "${dir}/runs"`,
        `printf '%s' "$KUBERNETES_EXEC_INFO" > "${dir}/info"`,
        `printf '{"apiVersion":"${V1}","kind":"ExecCredential","status":{"token":"%s-%s"}}' "$1" "$TEAM"`,
      ].join("\n"),
    );
    await Deno.chmod(plugin, 0o755);
    const kubeconfig = join(dir, "kubeconfig");
    await Deno.writeTextFile(
      kubeconfig,
      JSON.stringify({
        "current-context": "c",
        clusters: [{ name: "k", cluster: { server: "https://k.example:6443" } }],
        users: [{
          name: "me",
          user: {
            exec: {
              apiVersion: V1,
              command: "./bin/plugin.sh",
              args: ["blue"],
              env: [{ name: "TEAM", value: "hpc" }],
              provideClusterInfo: true,
              interactiveMode: "Never",
            },
          },
        }],
        contexts: [{ name: "c", context: { cluster: "k", user: "me" } }],
      }),
    );
    const conn = await loadKubeconfig(kubeconfig);
    assert.equal(conn.exec?.command, plugin);
    const creds = credentialsOf(conn, 60_000);
    assert.equal(await creds.header(), "Bearer blue-hpc");
    assert.equal(await creds.header(), "Bearer blue-hpc");
    assert.equal((await Deno.readTextFile(join(dir, "runs"))).trim().split("\n").length, 1);
    const info = JSON.parse(await Deno.readTextFile(join(dir, "info")));
    assert.equal(info.spec.cluster.server, "https://k.example:6443");
    assert.equal(info.spec.interactive, false);
    assert.equal(creds.invalidate(), true);
    assert.equal(await creds.header(), "Bearer blue-hpc");
    assert.equal((await Deno.readTextFile(join(dir, "runs"))).trim().split("\n").length, 2);

    const missing = credentialsOf(
      { ...conn, exec: { ...conn.exec!, command: join(dir, "nope") } },
      1,
    );
    await assert.rejects(missing.header(), KubeconfigError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
