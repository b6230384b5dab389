/**
 * User text in the generated scripts never changes the structure around it: a line ending in
 * `\` (a line continuation) in `command`, `commands.*`, `commands.script` or a batch line, or lines
 * that a continuation joins into a heredoc's delimiter, must neither swallow what the operator
 * writes after it nor end an embedded file early. Each case runs the lead broker's script against
 * stub commands and checks that Flux started, the script went on to its end, and nothing that was
 * meant to be file content ran.
 */
import assert from "node:assert/strict";
import type { MiniClusterContainer } from "../../api/mod.ts";
import {
  commandLine,
  shellQuote,
  unquotedHeredoc,
  userBlock,
} from "../../controllers/minicluster/children/scripts/parts/shell.ts";
import { run } from "../generated/script_checks.ts";
import { inSandbox, runLead } from "./lead_sandbox.ts";

Deno.test("a trailing backslash in command, pre, post or a batch line ends there", async () => {
  const cases: [string, MiniClusterContainer][] = [
    ["command", { command: "hostname \\" }],
    ["command over lines", { command: "hostname \\\n  -s \\\n" }],
    ["commands.pre", { command: "hostname", commands: { pre: "echo pre \\" } }],
    ["commands.brokerPre", { command: "hostname", commands: { brokerPre: "echo bp\\\n" } }],
    ["commands.post", { command: "hostname", commands: { post: "echo post \\" } }],
    ["batch line", { command: "echo one\necho two \\", batch: true }],
    ["batchRaw line", { command: "#FLUX: -N1\necho two \\", batch: true, batchRaw: true }],
  ];
  for (const [label, container] of cases) {
    await inSandbox(async (root) => {
      const { problems, result, fluxStart } = await runLead(root, container);
      assert.deepEqual(problems, [], label);
      assert.equal(result.code, 0, `${label}: ${result.stderr}`);
      assert.ok(fluxStart, `${label}: flux started`);
      assert.match(
        result.stdout,
        /Flux finished with exit code 0/,
        `${label}: the script ran to its end`,
      );
    });
  }
});

Deno.test("unclosed quotes or operators in prefix, submitCommand or optionFlags stay on their line", async () => {
  const cases: [string, MiniClusterContainer, Record<string, string>][] = [
    ["prefix quote", { command: "hostname", commands: { prefix: "env 'A=b" } }, {}],
    ["prefix continuation", { command: "hostname", commands: { prefix: "env \\" } }, {}],
    ["submitCommand quote", { command: "hostname" }, { submitCommand: 'flux submit "x' }],
    ["optionFlags operators", { command: "hostname" }, { optionFlags: "-o a) ; touch pwned" }],
    ["optionFlags quote", { command: "hostname" }, { optionFlags: "-o 'a" }],
    ["command quote", { command: "echo 'a; touch pwned" }, {}],
    ["command substitution", { command: "echo $(touch pwned" }, {}],
  ];
  for (const [label, container, flux] of cases) {
    await inSandbox(async (root) => {
      const { problems, result, fluxStart } = await runLead(root, container, flux);
      assert.deepEqual(problems, [], label);
      assert.equal(result.code, 0, `${label}: ${result.stderr}`);
      assert.ok(fluxStart, `${label}: flux started`);
      assert.match(result.stdout, /Flux finished with exit code 0/, label);
      await assert.rejects(Deno.stat(`${root}/pwned`), Deno.errors.NotFound, label);
    });
  }
});

Deno.test("commands.script: a trailing backslash or a joined delimiter never ends the file early", async () => {
  const pwned = "touch pwned-by-script";
  const scripts = [
    "echo one\necho two \\",
    // Joined by the continuation, these lines read as the heredoc's delimiter.
    `echo one\nMINICLUSTER_SCRIPT_\\\nEOF\n${pwned}`,
    `echo one\nMINICLUSTER_SCRIPT_EOF_1\nMINICLUSTER_SCRIPT_EOF\\\n\n${pwned}`,
  ];
  for (const script of scripts) {
    await inSandbox(async (root) => {
      const { problems, result, fluxStart } = await runLead(root, { commands: { script } });
      assert.deepEqual(problems, [], script);
      assert.equal(result.code, 0, `${script}: ${result.stderr}`);
      // The file is written and run inside the sandbox, where no other run writes it.
      const file = `${root}/custom-entrypoint.sh`;
      assert.deepEqual(fluxStart?.slice(-2), ["/bin/bash", file], script);
      assert.match(await Deno.readTextFile(file), /^echo one\n/, script);
      assert.match(result.stdout, /Flux finished with exit code 0/, script);
      await assert.rejects(Deno.stat(`${root}/pwned-by-script`), Deno.errors.NotFound, script);
    });
  }
});

Deno.test("batch: joined lines never end flux-job.batch early", async () => {
  await inSandbox(async (root) => {
    const command = "echo one\nMINICLUSTER_BATCH_\\\nEOF\ntouch pwned-by-batch";
    const { result, batch } = await runLead(root, { command, batch: true, batchRaw: true });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Flux finished with exit code 0/);
    assert.ok(batch?.includes("touch pwned-by-batch"), batch);
    await assert.rejects(Deno.stat(`${root}/pwned-by-batch`), Deno.errors.NotFound);
  });
});

Deno.test("the file content of an unquoted heredoc is what bash would have written", async () => {
  // $VAR expands when the file is written, \$VAR stays; continuations join as bash joins them.
  const script = "a=$HOME \\$HOME\nb \\\\\nc \\\nd\ne\\";
  const file = await Deno.makeTempFile({ prefix: "mc-heredoc-" });
  try {
    const write = unquotedHeredoc(shellQuote(file), script, "EOF");
    const result = await run("bash", ["-c", write], {
      env: { HOME: "/home/x", PATH: "/usr/bin:/bin" },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(await Deno.readTextFile(file), "a=/home/x $HOME\nb \\\nc d\ne\n");
  } finally {
    await Deno.remove(file);
  }
  assert.equal(commandLine("hostname \\"), "hostname");
  assert.equal(commandLine("echo a\\\\"), "echo a\\\\");
  assert.deepEqual(userBlock("echo \\", false), ["echo"]);
});
