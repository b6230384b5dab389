/**
 * Shell operators in the Flux container's `command` reach the job as words, as with the Go
 * operator (`command="…"` then `flux submit … ${command}`), instead of applying to the `flux start`
 * line; quotes and substitutions keep their shell meaning.
 */
import assert from "node:assert/strict";
import { commandWords } from "../../controllers/minicluster/children/scripts/parts/command-words.ts";
import { run } from "../generated/script_checks.ts";
import { inSandbox, runLead } from "./lead_sandbox.ts";

Deno.test("commandWords escapes operators outside quotes and substitutions only", () => {
  const cases: [string, string][] = [
    ["hostname", "hostname"],
    ["a; b | c & d > e < f (g) # h", "a\\; b \\| c \\& d \\> e \\< f \\(g\\) \\# h"],
    ["a#b", "a#b"],
    [
      "echo 'a; b' \"c | $(d | e)\" $(f; g) `h & i` ${j:-k;l}",
      "echo 'a; b' \"c | $(d | e)\" $(f; g) `h & i` ${j:-k;l}",
    ],
    ["echo \\; $'x\\'; y' $((1 + (2)))", "echo \\; $'x\\'; y' $((1 + (2)))"],
    ["2>&1", "2\\>\\&1"],
  ];
  for (const [command, words] of cases) assert.equal(commandWords(command), words, command);
  // Never-ending quotes or substitutions: each blank-separated word taken literally.
  assert.equal(commandWords("echo 'a; b"), "'echo' ''\\''a;' 'b'");
  assert.equal(commandWords("echo $(x"), "'echo' '$(x'");
  assert.equal(commandWords("echo x\\"), "'echo' 'x\\'");
});

/** The words the Go operator's script hands to `flux submit` for a command. */
async function goWords(command: string): Promise<string[]> {
  const script = `command="${command}"\nprintf '%s\\0' \${command}`;
  const result = await run("bash", ["-c", script], { env: { PATH: "/usr/bin:/bin", X: "x y" } });
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.split("\0").slice(0, -1);
}

Deno.test("the job gets the words Go's script gave it; nothing applies to flux start", async () => {
  // Without `"` or glob characters (Go's assignment broke on `"`; globs match files in both).
  const commands = [
    "hostname",
    "echo hi > out.txt",
    "sleep 1 & touch ran-after",
    "lmp -in in.lj | tee log; touch ran-after",
    "echo $(echo sub) && touch ran-after || true",
    "echo (x) <in # not a comment",
    "echo $((1 + 2)) 2>&1",
  ];
  for (const mode of ["submit", "launcher"] as const) {
    for (const command of commands) {
      await inSandbox(async (root) => {
        const { problems, result, fluxStart } = await runLead(root, {
          command,
          launcher: mode === "launcher",
        });
        assert.deepEqual(problems, [], command);
        assert.equal(result.code, 0, `${command}: ${result.stderr}`);
        assert.ok(fluxStart, `${mode} ${command}: flux started`);
        const expected = await goWords(command);
        assert.deepEqual(fluxStart.slice(-expected.length), expected, `${mode}: ${command}`);
        // Nothing ran beside Flux: no redirection, no second command.
        for (const file of ["out.txt", "ran-after", "log"]) {
          await assert.rejects(Deno.stat(`${root}/${file}`), Deno.errors.NotFound, file);
        }
      });
    }
  }
});
