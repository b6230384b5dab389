/** The pure parts of `deno task demo` (hack/demo.ts). */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { demoManifest } from "../../hack/demo.ts";
import { compilePermissions } from "../../hack/permissions.ts";

const read = (path: string) => Deno.readTextFileSync(new URL(`../../${path}`, import.meta.url));

Deno.test("demo: the operator runs with exactly the permission flags of deno task compile", () => {
  const flags = compilePermissions(read("deno.json"));
  assert.ok(flags.length > 0);
  assert.ok(!flags.includes("-A") && !flags.includes("--allow-all"));
  for (const f of flags) assert.match(read("deno.json"), new RegExp(`"compile": "[^"]*${f}[ "]`));
  assert.throws(() => compilePermissions('{"tasks":{"compile":"deno compile mod.ts"}}'));
});

Deno.test("demo: hello-world gets the KWOK keep-running annotation and nothing else changes", () => {
  const original = parse(read("examples/hello-world.yaml"));
  const applied = parse(demoManifest(read("examples/hello-world.yaml")));
  assert.equal(applied.spec.pod.annotations["kwok.x-k8s.io/keep-running"], "true");
  delete applied.spec.pod;
  assert.deepEqual(applied, original);
});
