/**
 * `commands.script` goes through an unquoted heredoc (as in Go), so `$i` and `$(...)` expand when
 * the file is written; the recipe of docs/tutorials.md (a quoted heredoc in `commands.pre`, then
 * the file as the command) keeps them for run time. Both run under bash in a sandbox.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { MiniCluster } from "../../api/mod.ts";
import {
  CUSTOM_SCRIPT_PATH,
  customScript,
} from "../../controllers/minicluster/children/scripts/custom-script.ts";
import { run } from "../generated/script_checks.ts";
import { inSandbox, runLead } from "./lead_sandbox.ts";

const HEADING = "### A script with loops and substitutions";
const RECIPE_PATH = "/tmp/job.sh";
const LOOP = 'for i in 1 2 3; do\n  echo "step $i on $(hostname)"\ndone';

/** The MiniCluster of the recipe: the first YAML block under its heading in the tutorials. */
function documentedRecipe(): MiniCluster {
  const doc = Deno.readTextFileSync(new URL("../../docs/tutorials.md", import.meta.url));
  const section = doc.slice(doc.indexOf(HEADING));
  assert.ok(section.startsWith(HEADING), `docs/tutorials.md has no "${HEADING}"`);
  const block = section.match(/```yaml\n([\s\S]*?)```/);
  assert.ok(block, "the recipe's YAML block");
  return parse(block[1]) as MiniCluster;
}

Deno.test("the documented quoted heredoc in commands.pre keeps $i and $(...) and runs the loop", async () => {
  const container = documentedRecipe().spec!.containers[0];
  assert.ok(container.commands?.pre?.includes(LOOP), "the recipe writes the loop");
  await inSandbox(async (root) => {
    // The recipe as documented, its file moved into the sandbox.
    const jobPath = `${root}/job.sh`;
    const moved = {
      ...container,
      command: container.command!.replaceAll(RECIPE_PATH, jobPath),
      commands: {
        ...container.commands,
        pre: container.commands!.pre!.replaceAll(RECIPE_PATH, jobPath),
      },
    };
    const { result, fluxStart } = await runLead(root, moved);
    assert.equal(result.code, 0, result.stderr);
    // Written as is: nothing expanded when commands.pre ran.
    assert.equal(await Deno.readTextFile(jobPath), `${LOOP}\n`);
    // Flux is handed the file as the job (the stub records it) ...
    const job = fluxStart!.slice(fluxStart!.indexOf("--watch") + 1);
    assert.deepEqual(job, ["bash", jobPath]);
    // ... and the job's run expands at run time, on the node it runs on.
    const ran = await run("bash", [jobPath], { env: { PATH: `${root}/bin:/usr/bin:/bin` } });
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(ran.stdout, "step 1 on mc-0\nstep 2 on mc-0\nstep 3 on mc-0\n");
  });
});

Deno.test("commands.script expands $i and $(...) when the file is written (as in Go)", async () => {
  await inSandbox(async (root) => {
    const target = `${root}/custom-entrypoint.sh`;
    const writing = customScript(LOOP).join("\n").replaceAll(CUSTOM_SCRIPT_PATH, target);
    const wrote = await run("bash", ["-c", writing], {
      env: { PATH: `${root}/bin:/usr/bin:/bin`, i: "" },
    });
    assert.equal(wrote.code, 0, wrote.stderr);
    const file = await Deno.readTextFile(target);
    assert.doesNotMatch(file, /\$i|\$\(hostname\)/, "expanded at write time");
    assert.match(file, /echo "step {2}on [^"]+"/);
    const ran = await run("bash", [target]);
    assert.doesNotMatch(ran.stdout, /step [123]/, "the loop lost its variable");
  });
});
