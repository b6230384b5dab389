/** The pure parts of `deno task demo` (hack/demo.ts). */
import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  demoOutputProblems,
  realManifest,
  reportedByLeadBroker,
  simulatedManifest,
} from "../../hack/demo.ts";
import { FLUX_APP_IMAGE, FLUX_VIEW_IMAGE } from "../../hack/images/refs.ts";
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
  const applied = parse(simulatedManifest(read("examples/hello-world.yaml")));
  assert.equal(applied.spec.pod.annotations["kwok.x-k8s.io/keep-running"], "true");
  delete applied.spec.pod;
  assert.deepEqual(applied, original);
});

Deno.test("demo: on the real node, hello-world runs its command on every node with local images", () => {
  const original = parse(read("examples/hello-world.yaml"));
  const mc = parse(realManifest(read("examples/hello-world.yaml")));
  const [flux] = mc.spec.containers;
  assert.equal(flux.image, FLUX_APP_IMAGE);
  assert.equal(mc.spec.flux.container.image, FLUX_VIEW_IMAGE);
  assert.equal(flux.launcher, true);
  assert.match(flux.commands.script, /^flux resource list$/m);
  assert.ok(
    flux.commands.script.includes(
      `flux run -N${original.spec.size} --label-io ${original.spec.containers[0].command}`,
    ),
  );
  assert.equal(mc.spec.pod.nodeSelector["minicluster.local/real-node"], "true");
  assert.equal(mc.spec.pod.tolerations[0].key, "minicluster.local/real-node");
  assert.equal(mc.spec.size, original.spec.size);
});

Deno.test("demo: the lead broker's report is the commands and their output, without broker logs", () => {
  const log = [
    "Hello user root",
    "demo$ flux resource list",
    "     STATE NNODES",
    "<6>broker.info[0]: rc2.0 ...",
    "      free      2",
    "demo$ flux run -N2 --label-io echo hi",
    "0: hi",
    "Flux finished with exit code 0",
  ].join("\n");
  assert.equal(
    reportedByLeadBroker(log),
    "$ flux resource list\n     STATE NNODES\n      free      2\n$ flux run -N2 --label-io echo hi\n0: hi",
  );
  assert.equal(reportedByLeadBroker("no marks"), "");
});

Deno.test("demo: its output is checked for the lead broker's resource list and every rank's echo", () => {
  const example = read("examples/hello-world.yaml");
  const good = [
    "$ kubectl get mc,job,pods,svc,cm,secret",
    "What the lead broker (hello-world-0) reported:",
    "$ flux resource list",
    "     STATE NNODES NCORES NGPUS NODELIST",
    "      free      2      4     0 hello-world-[0-1]",
    " allocated      0      0     0",
    "      down      0      0     0",
    "$ flux run -N2 --label-io echo hello world",
    "0: hello world",
    "1: hello world",
    "",
    "MiniCluster hello-world Succeeded (95 s).",
  ].join("\n");
  assert.deepEqual(demoOutputProblems(good, example), []);
  assert.deepEqual(demoOutputProblems("MiniCluster hello-world Succeeded (1 s).", example), [
    "no `$ flux resource list` in what the lead broker reported",
  ]);
  const oneDown = good.replace("free      2", "free      1").replace("1: hello world\n", "");
  assert.deepEqual(demoOutputProblems(oneDown, example), [
    "flux resource list shows 1 free nodes, not 2:       free      1      4     0 hello-world-[0-1]",
    'no "1: hello world" from rank 1',
  ]);
});
