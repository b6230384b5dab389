/**
 * The Python SDK's set-up and the tests' reading of its scripts: every package of
 * tests/python_sdk/requirements.txt is pinned to one version with sha256 hashes (pip's
 * `--require-hashes --no-deps` installs nothing else), the SDK and the `six` it imports without
 * declaring are among them, and a script's result is its last stdout line.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PYTHON_SDK_DIR, scriptResult } from "../../testing/python_sdk.ts";

/** requirements.txt → [name, version, hashes] per package (continuation lines joined). */
function pins(text: string): { name: string; version: string; hashes: string[] }[] {
  return text.replace(/\s*\\\n\s*/g, " ").split("\n").filter((l) => l.trim() !== "").map((line) => {
    const m = line.match(/^([a-z0-9-]+)==(\S+)((?: --hash=sha256:[0-9a-f]{64})+)\s*$/);
    assert.ok(m, `not an exact pin with sha256 hashes: ${line}`);
    return { name: m[1], version: m[2], hashes: m[3].trim().split(" ") };
  });
}

Deno.test("python SDK: every requirement is an exact version with sha256 hashes", async () => {
  const list = pins(await Deno.readTextFile(join(PYTHON_SDK_DIR, "requirements.txt")));
  const names = list.map((p) => p.name);
  assert.equal(new Set(names).size, names.length, "a package is listed twice");
  const version = (name: string) => list.find((p) => p.name === name)?.version;
  assert.equal(version("fluxoperator"), "0.2.0");
  assert.ok(version("six"), "six: imported by fluxoperator, not declared by it");
  assert.ok(version("kubernetes"));
});

Deno.test("python SDK: a script's result is the JSON of its last stdout line", () => {
  const out = "sdk-pod-0 is in phase Running\nAll pods are terminated.\n" +
    '{"broker_pod": "sdk-0-x"}\n';
  assert.deepEqual(scriptResult({ code: 0, stdout: out, stderr: "" }), { broker_pod: "sdk-0-x" });
  assert.throws(
    () => scriptResult({ code: 1, stdout: "All pods are in states\n", stderr: "Traceback ..." }),
    /exited with 1 and printed no result:[\s\S]*Traceback/,
  );
});
