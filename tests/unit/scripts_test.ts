/**
 * The generated scripts as bash sees them: syntax (`bash -n`), shellcheck, and runs of the
 * scripts of a hostile manifest against stub commands, proving that no operator-derived value
 * can run code and that each arrives as exactly one argument.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { buildEntrypointConfigMap } from "../../controllers/minicluster/children/entrypoint.ts";
import {
  commandLine,
  heredocDelimiter,
  shellQuote,
} from "../../controllers/minicluster/children/scripts/parts/shell.ts";
import { expandingWord } from "../../controllers/minicluster/children/scripts/view-environment.ts";
import { relocateCurveCert, run, scriptProblems } from "../generated/script_checks.ts";
import { cases, hostileMiniCluster, miniCluster, nasty } from "./entrypoint_cases.ts";
import { inSandbox, runLead } from "./lead_sandbox.ts";
import { specSized } from "./fixtures.ts";
import { specSizing } from "../../controllers/minicluster/children/sizing.ts";

/** bash -n and shellcheck (every severity, unless told) find nothing in one script. */
async function assertCleanScript(label: string, script: string, severity = "style") {
  assert.deepEqual(await scriptProblems(label, script, severity), []);
}

Deno.test("shellQuote makes bash see exactly the value, whatever it holds", async () => {
  const values = [
    "",
    "plain",
    "it's",
    "$(touch /nonexistent/x)",
    "`id`",
    "a; b",
    "line\nbreak",
    '"double" \\ back',
    "${HOME}",
    "*",
    "-n",
    "tab\there",
    "ünïcødé ✨",
    "'",
    "''",
    "!event",
  ];
  const random = fc.sample(fc.string({ unit: "binary", maxLength: 40 }), 60)
    .map((s) => s.replaceAll("\0", ""));
  const all = [...values, ...random];
  // One bash run prints every quoted value NUL-separated.
  const script = all.map((v) => `printf '%s\\0' ${shellQuote(v)}`).join("\n");
  const result = await run("bash", ["-c", script]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(result.stdout.split("\0").slice(0, -1), all);
});

Deno.test("flux.environment values: $NAME and ${NAME} expand, nothing else does", async () => {
  const env = { PATH: "/usr/bin:/bin", FOO: "foo value", HOME: "/home/x" };
  const expanded = (value: string) =>
    value.replace(
      /\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})/g,
      (_, a, b) => (env as Record<string, string>)[a ?? b] ?? "",
    );
  const check = async (value: string) => {
    const r = await run("bash", ["-uc", `printf '%s' ${expandingWord(value)}`], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, expanded(value), JSON.stringify(value));
  };
  for (
    const value of [
      "$PATH:/opt/bin",
      "${FOO}bar",
      "$FOOBAR",
      "$UNSET-x",
      "${FOO:-x}",
      "$(touch /nonexistent/x) `id` \\ \" ' $1 $$ ${",
      "line\nbreak\t$HOME",
    ]
  ) await check(value);
  await fc.assert(
    fc.asyncProperty(
      fc.string({
        // No "_": bash sets $_ itself (it expands as in Go's script, but not to the env's value).
        unit: fc.constantFrom("$", "{", "}", "F", "O", "1", '"', "\\", "`", " ", "a"),
      }),
      check,
    ),
    { numRuns: 60 },
  );
});

Deno.test("shellQuote leaves safe words bare and refuses NUL", () => {
  assert.equal(shellQuote("flux-sample-0"), "flux-sample-0");
  assert.equal(shellQuote("/mnt/flux"), "/mnt/flux");
  assert.equal(shellQuote(8050), "8050");
  assert.equal(shellQuote("a b"), "'a b'");
  assert.equal(shellQuote(""), "''");
  assert.throws(() => shellQuote("a\0b"), /NUL/);
});

Deno.test("heredoc delimiters never occur as a line of the content", () => {
  assert.equal(heredocDelimiter("EOF", "a\nb"), "EOF");
  assert.equal(heredocDelimiter("EOF", "EOF\nEOF_1"), "EOF_2");
});

Deno.test("multi-line commands join the way word splitting joins them", () => {
  assert.equal(commandLine("lmp \\\n  -in x\n"), "lmp -in x");
  assert.equal(commandLine("a\nb\n"), "a b");
  assert.equal(commandLine(undefined), "");
});

Deno.test("every script of every golden manifest passes bash -n and shellcheck", async () => {
  for (const [name, spec] of Object.entries(cases)) {
    const data = buildEntrypointConfigMap(...specSized(miniCluster(spec))).data ?? {};
    for (const [key, script] of Object.entries(data)) {
      await assertCleanScript(`${name}/${key}`, script);
    }
  }
});

Deno.test("scripts of a hostile manifest pass bash -n and shellcheck", async () => {
  const data = buildEntrypointConfigMap(...specSized(hostileMiniCluster("/work", "pwned"))).data ??
    {};
  for (const [key, script] of Object.entries(data)) {
    await assertCleanScript(`hostile/${key}`, script, "warning");
  }
});

Deno.test("scripts of user commands with quotes, pipes and heredoc markers pass bash -n", async () => {
  const mc = miniCluster({
    size: 2,
    containers: [
      {
        runFlux: true,
        batch: true,
        command: "echo 'single' \"double\" | tr a b\nMINICLUSTER_BATCH_EOF\ncat <<EOF\nx\nEOF\n",
        commands: {
          pre: "if true; then\n  echo pre\nfi",
          post: "cat <<'END'\n$(not run)\nEND",
          script: undefined,
        },
      },
      { name: "side", command: 'echo "$fluxsocket" && sleep 1', commands: { script: "echo x" } },
    ],
  });
  for (
    const [key, script] of Object.entries(buildEntrypointConfigMap(mc, specSizing(mc)).data ?? {})
  ) {
    const syntax = await run("bash", ["-n"], { stdin: script });
    assert.equal(syntax.code, 0, `${key}: ${syntax.stderr}`);
  }
});

/** Stub commands that record their arguments NUL-separated, one record per call. */
async function stubDir(root: string): Promise<string> {
  const bin = `${root}/bin`;
  await Deno.mkdir(bin, { recursive: true });
  const recorder = (name: string) =>
    `#!/bin/bash\n{ printf '%s\\0' ${name} "$@"; printf '\\n'; } >> "$STUB_LOG"\n`;
  await Deno.writeTextFile(
    `${bin}/flux`,
    recorder("flux") +
      // `flux R encode` output is redirected into a file; any content will do.
      `if [ "$1" = R ]; then echo '{"version": 1}'; fi\n`,
    { mode: 0o755 },
  );
  await Deno.writeTextFile(`${bin}/hostname`, `#!/bin/bash\nprintf '%s\\n' "$STUB_HOSTNAME"\n`, {
    mode: 0o755,
  });
  for (const name of ["chown", "sleep"]) {
    await Deno.writeTextFile(`${bin}/${name}`, recorder(name), { mode: 0o755 });
  }
  return bin;
}

/** The recorded calls: each an argv (command first). */
async function calls(log: string): Promise<string[][]> {
  const text = await Deno.readTextFile(log).catch(() => "");
  return text.split("\0\n").filter((r) => r !== "").map((r) => r.split("\0"));
}

Deno.test("hostile values never run and reach Flux as single arguments", async () => {
  const root = await Deno.makeTempDir({ prefix: "mc-scripts-" });
  try {
    // Relative, so that hostile paths stay one directory level; the scripts run in `root`.
    const marker = "pwned";
    const evil = nasty(marker);
    const mc = hostileMiniCluster(root, marker);
    const data = buildEntrypointConfigMap(mc, specSizing(mc)).data ?? {};
    const bin = await stubDir(root);
    const log = `${root}/calls`;
    const mountPath = mc.spec.flux.container.mountPath;

    // The init script's hostlist and broker.toml, run on their own (the rest copies /opt/view).
    const init = data["flux-view"];
    const start = init.indexOf("# Brokers in rank order");
    const end = init.indexOf("# The rundir");
    assert.ok(start > 0 && end > start);
    const installRoot = `${mountPath}/config`;
    await Deno.mkdir(`${installRoot}/etc/flux/system`, { recursive: true });
    await Deno.mkdir(`${installRoot}/etc/flux/config`, { recursive: true });
    const part = `installRoot=${shellQuote(installRoot)}\n${init.slice(start, end)}`;
    const initRun = await run("bash", ["-c", part], { cwd: root });
    assert.equal(initRun.code, 0, initRun.stderr);
    const hostlist = await Deno.readTextFile(`${installRoot}/etc/flux/system/hostlist`);
    assert.equal(hostlist, `mc${evil}-[0-2],burst${evil}-[0-1]\n`);
    const toml = await Deno.readTextFile(`${installRoot}/etc/flux/config/broker.toml`);
    assert.ok(
      toml.includes(
        `default_connect = ${JSON.stringify(`tcp://%h.net${evil}.ns${evil}.svc.cluster.local:%p`)}`,
      ),
    );

    // The view is ready; an archive exists; the side container's socket exists.
    await Deno.writeTextFile(`${mountPath}/flux-operator-done.txt`, "");
    await Deno.writeTextFile(`${root}/archive ${evil}`, "");
    await Deno.mkdir(`${installRoot}/run/flux`, { recursive: true });
    await Deno.writeTextFile(`${installRoot}/run/flux/local`, "");

    const env = {
      PATH: `${bin}:/usr/bin:/bin`,
      HOME: root,
      STUB_LOG: log,
    };
    await Deno.writeTextFile(`${root}/curve.cert`, "", { mode: 0o400 });
    const wait = relocateCurveCert(data["wait-0"], `${root}/curve.cert`);
    for (const [hostname, role] of [[`mc${evil}-0`, "lead"], [`mc${evil}-1`, "follower"]]) {
      await Deno.remove(log).catch(() => {});
      const result = await run("bash", ["-c", wait], {
        env: { ...env, STUB_HOSTNAME: hostname },
        cwd: root,
      });
      assert.equal(result.code, 0, `${role}: ${result.stderr}`);
      const starts = (await calls(log)).filter((c) => c[0] === "flux" && c[1] === "start");
      assert.equal(starts.length, 1, `${role}: one flux start`);
      const argv = starts[0];
      assert.ok(argv.includes(`--wrap=strace,${evil}`), `${role}: wrap is one argument`);
      assert.ok(argv.includes(`-Stbon.connect_timeout=5s${evil}`));
      assert.ok(argv.includes(`-Stbon.topo=kary:${evil}`));
      assert.ok(argv.includes(`-Scontent.restore=${root}/archive ${evil}`));
      assert.ok(argv.includes("-Sbroker.quorum=2"));
      assert.ok(argv.includes(`-Srundir=${installRoot}/run/flux`));
      if (role === "lead") {
        assert.deepEqual(argv.slice(-6), [
          "flux",
          "submit",
          "-n1",
          "--quiet",
          "--watch",
          "hostname",
        ]);
      } else assert.equal(argv.at(-1), `-Scontent.restore=${root}/archive ${evil}`);
      const encode = (await calls(log)).find((c) => c[1] === "R");
      assert.deepEqual(encode, ["flux", "R", "encode", `--hosts=${hostlist.trim()}`, "--local"]);
    }
    // The environment file restores the value with its variable references expanded (as the Go
    // operator did), and nothing else: no command ran, no word split.
    const sourced = await run("bash", [
      "-c",
      `. ${shellQuote(`${mountPath}/flux-view.sh`)}; printf '%s' "$HOSTILE"`,
    ]);
    assert.equal(sourced.stdout, evil.replace("${HOME}", root));
    // The side container runs its command after the socket exists.
    const side = await run("bash", ["-c", data["start-1"]], {
      env: { ...env, STUB_HOSTNAME: "x" },
      cwd: root,
    });
    assert.equal(side.code, 0, side.stderr);
    assert.match(side.stdout, /side-started/);

    await assert.rejects(
      Deno.stat(`${root}/${marker}`),
      Deno.errors.NotFound,
      "an injected command ran",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a CURVE certificate the Flux container cannot read ends the wait script with why", async () => {
  await inSandbox(async (root) => {
    const { result, fluxStart } = await runLead(root, { command: "hostname" }, {}, {
      noCert: true,
    });
    assert.equal(result.code, 1);
    assert.equal(fluxStart, undefined);
    assert.match(
      result.stderr,
      /The CURVE certificate .*curve\.cert is not readable by uid \d+: set securityContext\.runAsUser of this container or spec\.pod\.securityContext\.fsGroup/,
    );
  });
  // The same run with the certificate in place starts Flux and installs a 0600 copy.
  await inSandbox(async (root) => {
    const { result, fluxStart } = await runLead(root, { command: "hostname" });
    assert.equal(result.code, 0, result.stderr);
    assert.ok(fluxStart);
    const copy = await Deno.stat(`${root}/mnt/config/curve/curve.cert`);
    assert.equal(copy.mode! & 0o777, 0o600);
  });
});
