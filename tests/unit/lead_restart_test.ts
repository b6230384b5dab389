/**
 * The end of the lead broker's run is final (scripts/lead-finished.ts): a failed run exits with
 * the code the Job fails on, and a lead broker started again in its pod (restartPolicy OnFailure)
 * fails at once instead of waiting for followers that completed with the first instance.
 */
import assert from "node:assert/strict";
import { LEAD_FAILED_EXIT_CODE } from "../../controllers/minicluster/children/scripts/lead-finished.ts";
import { inSandbox, runLead } from "./lead_sandbox.ts";

Deno.test("a lead broker whose Flux run failed exits with the code the Job fails on, saying Flux's", async () => {
  await inSandbox(async (root) => {
    const { result, fluxStart, problems } = await runLead(root, { command: "mpirun ./a.out" }, {}, {
      fluxExitCode: 3,
    });
    assert.deepEqual(problems, []);
    assert.ok(fluxStart);
    assert.equal(result.code, LEAD_FAILED_EXIT_CODE, result.stderr);
    assert.match(
      result.stderr,
      /The lead broker's Flux instance ended with exit code 3; its followers completed with it/,
    );
  });
});

Deno.test("a lead broker whose Flux run failed under logging.strict also exits with that code", async () => {
  await inSandbox(async (root) => {
    const { result, fluxStart } = await runLead(root, { command: "mpirun ./a.out" }, {}, {
      fluxExitCode: 3,
      strict: true,
    });
    assert.ok(fluxStart);
    assert.equal(result.code, LEAD_FAILED_EXIT_CODE, result.stderr);
    assert.match(result.stderr, /ended with exit code 3/);
  });
});

Deno.test("a lead broker failing in commands.post after its run exits with the code the Job fails on", async () => {
  await inSandbox(async (root) => {
    const { result } = await runLead(
      root,
      {
        command: "hostname",
        commands: { post: "exit 5" },
      },
      {},
      { strict: true },
    );
    assert.equal(result.code, LEAD_FAILED_EXIT_CODE, result.stderr);
    assert.match(result.stderr, /ended with exit code 5/);
  });
});

Deno.test("a lead broker restarted in its pod after its run ended fails at once, not waiting for followers", async () => {
  await inSandbox(async (root) => {
    const first = await runLead(root, { command: "mpirun ./a.out" }, {}, { fluxExitCode: 3 });
    assert.equal(first.result.code, LEAD_FAILED_EXIT_CODE, first.result.stderr);
    // The container started again in the same pod: same volumes, the script from the start.
    const again = await runLead(root, { command: "mpirun ./a.out" }, {}, { fluxExitCode: 3 });
    assert.equal(again.fluxStart, undefined, "no flux start: its followers will never join it");
    assert.equal(again.result.code, LEAD_FAILED_EXIT_CODE, again.result.stderr);
    assert.match(
      again.result.stderr,
      /The lead broker's Flux instance already ended \(exit code 3\); its followers completed with it/,
    );
  });
});

Deno.test("a lead broker whose Flux run succeeded exits 0", async () => {
  await inSandbox(async (root) => {
    const { result, fluxStart } = await runLead(root, { command: "hostname" }, {}, {
      strict: true,
    });
    assert.ok(fluxStart);
    assert.equal(result.code, 0, result.stderr);
  });
});
