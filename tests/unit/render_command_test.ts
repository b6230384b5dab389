// `render` reads many documents: one it cannot read (bad YAML, an alias bomb) is reported with its
// number and the others are still rendered. tests/integration/render_messages_test.ts covers the
// documents it can read but the API server or the operator would refuse.

import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { renderCommand } from "../../controllers/minicluster/render/render_command.ts";

const VALID = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata: {name: still-rendered}
spec: {containers: [{image: ubuntu:noble, command: hostname}]}
`;

/** Runs the command on `input`, with what it prints. */
async function run(input: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  const [log, error] = [console.log, console.error];
  const out: string[] = [];
  const err: string[] = [];
  console.log = (s: string) => out.push(s);
  console.error = (s: string) => err.push(s);
  try {
    await Deno.writeTextFile(file, input);
    const code = await renderCommand(["-f", file]);
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  } finally {
    [console.log, console.error] = [log, error];
    await Deno.remove(file);
  }
}

const jobs = (stdout: string) =>
  parseAllDocuments(stdout).map((d) => d.toJS()).filter((o) => o?.kind === "Job");

Deno.test("render: a document that is not YAML is reported, the next still rendered", async () => {
  const { code, stdout, stderr } = await run(`spec: [unclosed\n---\n${VALID}`);
  assert.equal(code, 1);
  assert.match(stderr, /^minicluster-operator render: \(document 1\): /);
  assert.deepEqual(jobs(stdout).map((j) => j.metadata.name), ["still-rendered"]);
});

Deno.test("render: an alias bomb is reported, not thrown, the next still rendered", async () => {
  const levels = ["a: &a [x, x, x, x, x, x, x, x, x]"];
  for (const [prev, name] of [["a", "b"], ["b", "c"], ["c", "d"], ["d", "e"], ["e", "f"]]) {
    levels.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(", ")}]`);
  }
  const { code, stdout, stderr } = await run(`${levels.join("\n")}\n---\n${VALID}`);
  assert.equal(code, 1);
  assert.match(stderr, /^minicluster-operator render: \(document 1\): .*alias/);
  assert.deepEqual(jobs(stdout).map((j) => j.metadata.name), ["still-rendered"]);
});
