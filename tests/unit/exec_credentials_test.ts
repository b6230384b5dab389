// Exec credential plugins (runtime/config/exec_credentials.ts): the protocol with a stand-in runner, and
// a real plugin program (a shell script) run through a kubeconfig.

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type ExecConfig,
  execInfo,
  ExecTokenSource,
  parseExecCredential,
  type RunPlugin,
} from "../../runtime/config/exec_credentials.ts";
import { credentialsOf } from "../../runtime/config/credentials.ts";
import { loadKubeconfig } from "../../runtime/config/kubeconfig.ts";
import { KubeconfigError } from "../../runtime/config/kubeconfig_error.ts";
import { FakeClock } from "../../runtime/core/clock.ts";
import { pluginRuns, processExists, writePlugin } from "../exec_plugin.ts";

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

/** A runner whose runs hang until aborted (recording the reason), then `fine` ones answer. */
function hanging() {
  const aborted: unknown[] = [];
  let hang = true;
  const run: RunPlugin = (_config, signal) => {
    if (!hang) return Promise.resolve({ code: 0, stdout: credential({ token: "ok" }), stderr: "" });
    return new Promise((_, reject) => {
      signal.addEventListener("abort", () => {
        aborted.push(signal.reason);
        reject(signal.reason);
      }, { once: true });
    });
  };
  return { run, aborted, answer: () => hang = false };
}

Deno.test("exec: a run that hangs is aborted at the timeout, logged, and is the problem until one succeeds", async () => {
  const plugin = hanging();
  const logs: { msg: string; fields?: Record<string, unknown> }[] = [];
  const log = {
    debug() {},
    info() {},
    warn() {},
    error: (msg: string, fields?: Record<string, unknown>) => logs.push({ msg, fields }),
  };
  const source = new ExecTokenSource(config, plugin.run, Date.now, { timeoutMs: 50, log });
  assert.equal(source.problem, undefined);
  await assert.rejects(
    source.token(),
    /exec plugin plugin \(user "u"\) did not finish in 0.05 s; killed/,
  );
  assert.equal(plugin.aborted.length, 1, "the run was aborted (the real runner kills it)");
  assert.match(source.problem ?? "", /did not finish/);
  assert.equal(logs.length, 1);
  assert.equal(logs[0].msg, "exec credential plugin failed");
  assert.equal(logs[0].fields?.command, "plugin");
  assert.equal(logs[0].fields?.timeoutMs, 50);
  plugin.answer();
  assert.equal(await source.token(), "ok");
  assert.equal(source.problem, undefined);
});

Deno.test("exec: a caller's signal ends its wait only; stop() aborts the run and runs no more", async () => {
  const plugin = hanging();
  const source = new ExecTokenSource(config, plugin.run, Date.now, { timeoutMs: 60_000 });
  const impatient = new AbortController();
  const first = source.token(impatient.signal);
  const second = source.token();
  impatient.abort(new Error("request timed out"));
  await assert.rejects(first, /request timed out/);
  assert.equal(plugin.aborted.length, 0, "the shared run goes on");
  source.stop();
  await assert.rejects(second, /the client is closing/);
  assert.equal(plugin.aborted.length, 1);
  assert.equal(source.problem, undefined, "stopping is not a credentials problem");
  plugin.answer();
  await assert.rejects(source.token(), /the client is closing/);
});

Deno.test("exec: the real runner kills a plugin program that hangs at the timeout", async () => {
  const dir = await Deno.makeTempDir({ prefix: "exec-plugin-" });
  try {
    const plugin = await writePlugin(dir, ["exec sleep 600"]);
    const source = new ExecTokenSource({ ...config, command: plugin }, undefined, Date.now, {
      timeoutMs: 300,
    });
    await assert.rejects(source.token(), /did not finish in 0.3 s; killed/);
    const [pid] = await pluginRuns(dir);
    assert.ok(pid > 0, "the plugin ran");
    // Reaped a moment after the kill.
    for (let i = 0; i < 50 && processExists(pid); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(!processExists(pid), `plugin ${pid} still runs`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const DAY_MS = 24 * 3600 * 1000;

Deno.test("exec: a timeout beyond the timer range (25 days) does not kill a run at once", async () => {
  let aborted = false;
  const run: RunPlugin = (_config, signal) =>
    new Promise((resolve, reject) => {
      // Answers after 100 ms; an overflowing timer would have aborted the run after about 1 ms.
      const answer = setTimeout(
        () => resolve({ code: 0, stdout: credential({ token: "slow" }), stderr: "" }),
        100,
      );
      signal.addEventListener("abort", () => {
        aborted = true;
        clearTimeout(answer);
        reject(signal.reason);
      }, { once: true });
    });
  const source = new ExecTokenSource(config, run, Date.now, { timeoutMs: 25 * DAY_MS });
  assert.equal(await source.token(), "slow");
  assert.equal(aborted, false);
  assert.equal(source.problem, undefined);
});

Deno.test("exec: a timeout beyond the timer range kills a hanging run at the timeout, not at the timer's longest delay", async () => {
  const clock = new FakeClock();
  const plugin = hanging();
  const source = new ExecTokenSource(config, plugin.run, Date.now, {
    timeoutMs: 30 * DAY_MS,
    clock,
  });
  const token = source.token();
  token.catch(() => {});
  await clock.advance(2 ** 31 - 1);
  assert.equal(plugin.aborted.length, 0, "killed at the longest timer delay (24.8 days)");
  await clock.advance(30 * DAY_MS - (2 ** 31 - 1) - 1);
  assert.equal(plugin.aborted.length, 0, "killed before the 30 days were up");
  await clock.advance(1);
  assert.equal(plugin.aborted.length, 1, "not killed at the timeout");
  await assert.rejects(token, /did not finish in 2592000 s; killed/);
  assert.equal(clock.pendingTimers, 0);
});
